"""The reference and alignment layer below the tool families: staged references and their
indexes, the alignment vocabulary (CIGAR operations, SAM flags and the masks built from
them) and the one way to run an aligner.

Staging, `reads` and `annotate` all use it; nothing in it imports a family
(tests/unit/test_import_layers.py walks its imports).
"""
