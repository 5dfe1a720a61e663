"""Composition: a canonical render repaired by re-running some of its tokens through the model,
so that tokens of one fragment attend to the others' (which no agent's own prefill did).

``realstate.compose(state, model, recompute=r, anchors=s)`` starts from the canonical render
(a function of the set), re-runs layers ``0..c`` for every token, scores each token by how far its
fresh keys at layer ``c`` deviate from the rendered ones, selects the top ``ceil(r·n)`` plus the
first ``s`` tokens of every fragment but the first in canonical order, carries the selected tokens
through the remaining layers against the mixed cache, and writes their keys and values back.
Every step reads only the render and its layout, so the composed cache is a function of the set
too (claim C9).  The repair follows CacheBlend (Yao et al., "CacheBlend: Fast Large Language
Model Serving for RAG with Cached Knowledge Fusion", arXiv:2405.16444) and the attention-sink
anchors of EPIC (Hu et al., "EPIC: Efficient Position-Independent Context Caching for Serving
Large Language Models", arXiv:2410.15332); the composed cache is a render, never a fragment.

Settings are importable without torch (``realstate.composition.settings``)."""
