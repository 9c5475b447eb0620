"""Build-time staging: what `python -m biotool.staging` runs at image build (and on a host,
for a site overlay) to fetch, verify, prepare and index every manifest item and write the
inventory, `staged.json`, that biotool.staging reads at run time.

Above the families (it runs their builders and checks, biotool.stagebuild.hooks) and below
the programs; nothing at run time imports it. cli (the command), build (one home's staging),
pins and fetch (the lock and verified downloads), prepare (the table of preparers; blastdb,
kraken2, hfmodel, prebuilt, genetable, gtf the heavy ones), layers (the image's data
layers), blastdate (reproducible BLAST database dates), tools (what preparers share).
"""
