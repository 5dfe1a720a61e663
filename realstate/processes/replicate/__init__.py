"""The distributed replay of C7: a launcher and the ranks it starts."""
