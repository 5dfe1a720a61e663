"""Models of the supported RoPE decoder family: seeded geometries, local checkpoints and GGUF
weights (offline, validated before anything is loaded), named packages; the agents that build
caches from them and the final agent's greedy continuation."""
