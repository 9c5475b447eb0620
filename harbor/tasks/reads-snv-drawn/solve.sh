#!/bin/bash
# Oracle: the reference the reads align to, then biotool's variant caller: its top SNV.
set -euo pipefail
# Which staged reference: the one most reads of a sample align to (biotool align on each).
best="" most=-1
for ref in $(biotool -q references | jq -r '.references[] | select(.usable) | .name'); do
    mapped=$(biotool -q align --reference "$ref" --fastq /task/reads.fastq --sample 2000 | jq .mapped)
    if [ "$mapped" -gt "$most" ]; then best=$ref most=$mapped; fi
done
biotool -q variants --reference "$best" --fastq /task/reads.fastq --top 10 > /tmp/variants.json
jq -c --arg ref "$best" '[.variants[] | select(.type == "SNV")] | max_by(.alt_reads)
    | {reference: $ref, pos, ref, alt}' /tmp/variants.json > /logs/artifacts/answer.json
