"""Instruments about the kernel shared by the commands that check it: the kernel behind
modelcheck's backend protocol, the planted-bug engines, and the bridge to the independent oracle."""
