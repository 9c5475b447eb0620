#!/bin/bash
# Oracle: the reference the reads align to, then every read aligned with bwa mem (split reads:
# a primary and a supplementary piece) and the two positions where most pieces are clipped,
# counted as `biotool breakpoints` documents: a piece starting at base b breaks at b-1, one
# ending at base b breaks at b.
set -euo pipefail
# Which staged reference: the one most reads of a sample align to (biotool align on each).
best="" most=-1
for ref in $(biotool -q references | jq -r '.references[] | select(.usable) | .name'); do
    mapped=$(biotool -q align --reference "$ref" --fastq /task/reads.fastq --sample 2000 | jq .mapped)
    if [ "$mapped" -gt "$most" ]; then best=$ref most=$mapped; fi
done
index=$(biotool -q index --reference "$best" --kind bwa | jq -r .path)
bwa mem -t 2 "$index" /task/reads.fastq 2>/dev/null | samtools view -q 20 -F 0x904 - > /tmp/aligned.sam
BEST="$best" python3 - <<'PY'
import collections, json, os, re
breaks = collections.Counter()
for line in open("/tmp/aligned.sam"):
    f = line.split("\t")
    ops = re.findall(r"(\d+)([MIDNSHP=X])", f[5])
    start = int(f[3])
    end = start + sum(int(n) for n, op in ops if op in "MDN=X") - 1
    if ops[0][1] in "SH" and int(ops[0][0]) >= 5:
        breaks[start - 1] += 1
    if ops[-1][1] in "SH" and int(ops[-1][0]) >= 5:
        breaks[end] += 1
left, right = sorted(pos for pos, _ in breaks.most_common(2))
json.dump({"reference": os.environ["BEST"], "left": left, "right": right},
          open("/logs/artifacts/answer.json", "w"))
PY
