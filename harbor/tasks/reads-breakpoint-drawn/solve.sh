#!/bin/bash
# Oracle: the reference the reads align to, then `biotool breakpoints` on it: a deletion longer
# than the reads splits the reads across it, so its two junctions (the last kept base and the
# last deleted one, in the command's convention) are the two top positions of `consensus`.
set -euo pipefail
# Which staged reference: the one most reads of a sample align to (biotool align on each).
best="" most=-1
for ref in $(biotool -q references | jq -r '.references[] | select(.usable) | .name'); do
    mapped=$(biotool -q align --reference "$ref" --fastq /task/reads.fastq --sample 2000 | jq .mapped)
    if [ "$mapped" -gt "$most" ]; then best=$ref most=$mapped; fi
done
biotool -q breakpoints --reference "$best" --fastq /task/reads.fastq \
    | jq --arg ref "$best" '[.consensus[:2][].pos] | sort
                            | {reference: $ref, left: .[0], right: .[1]}' \
    > /logs/artifacts/answer.json
