"""A representative share of the toolbox's image tests (tests/image/test_toolbox_in_image.py),
the same test functions and assertions, with each command run under real Apptainer on the node
instead of a docker container: aligners, quantifiers, callers, gene finding, R's DESeq2 against
its recorded results, the tool check of doctor. Every Python package importing (the image and
gVisor tiers' check, the costliest test under squashfuse) is left to test_image_shape.py's
heavy libraries."""

from __future__ import annotations

import pytest

from biotool_testing import hpc_node
from image.test_toolbox_in_image import (  # noqa: F401  (collected here, fixtures included)
    flu_reads,
    test_bowtie2_and_hisat2_on_bowtie2s_lambda_example,
    test_deseq2_and_pydeseq2_reproduce_deseq2s_recorded_results,
    test_doctor_starts_every_tool_and_the_names_agents_type_resolve,
    test_freebayes_and_ivar_find_the_known_deletion_in_the_artic_reads,
    test_kallisto_and_salmon_quantify_real_transcripts,
    test_prodigal_finds_phix174s_genes,
)


@pytest.fixture(scope="module")
def sandbox(node):
    return hpc_node.SandboxOnNode(node)
