"""`biotool call` benchmark: the tool policy over every tool, as ratios against peers.

1. Policy over every tool (what `biotool call --list` decides: the 9 built-ins and, when the
   optional extra is installed, every ToolUniverse tool): the shipped path (rules read once,
   normalised names and pattern matches cached) against a naive peer that re-reads and
   re-parses the rules file for each tool and matches with cold caches, as a per-call check
   with no shared state would.
2. One cold `biotool call seq_stats` process against the interpreter start-up with biotool
   imported (`python -c "import biotool.cli"`): what the call itself costs over start-up.

Run: python bench/annotate_bench.py [--repeat 3]. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from timing import repeated, timed


def policy_shipped(tools) -> list[bool]:
    from biotool import rules
    from biotool.annotate import calls, policy

    # Start as cold as the peer does; the caches then fill within this one pass.
    policy._prepared.cache_clear()
    policy.pattern_matches.cache_clear()
    policy._affixes_only.cache_clear()
    policy.key.cache_clear()
    r = rules.load()
    return [calls.decision_for(t, r).offered for t in tools]


def policy_naive(tools) -> list[bool]:
    from biotool import rules
    from biotool.annotate import policy

    out = []
    for t in tools:
        rules._load.cache_clear()  # re-read and re-parse the rules file for every tool
        policy._prepared.cache_clear()
        policy.pattern_matches.cache_clear()
        policy._affixes_only.cache_clear()
        policy.key.cache_clear()
        r = rules.load()
        out.append(policy.decide(t.names(), t.category, t.hosts, r, t.labels,
                                 t.endpoints).offered)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-sample", type=int, default=400,
                    help="tools the naive peer checks (it is slow); scaled per tool")
    args = ap.parse_args()

    from biotool.annotate import calls, tooluniverse_bridge

    t_load, tools = timed(lambda: calls.all_tools())
    shipped_s, shipped = repeated(lambda: policy_shipped(tools), args.repeat, min)
    sample = tools[:: max(1, len(tools) // args.naive_sample)]
    naive_s, naive = repeated(lambda: policy_naive(sample), args.repeat, min)
    assert naive == [shipped[tools.index(t)] for t in sample], "peers disagree"
    per_tool_shipped = shipped_s / len(tools)
    per_tool_naive = naive_s / len(sample)

    def proc(argv):
        return subprocess.run(argv, capture_output=True, text=True, check=True)

    call_s, _ = repeated(lambda: proc([sys.executable, "-m", "biotool", "call", "seq_stats",
                                       '{"sequence": "ATGGCCAAGTAA"}']), args.repeat, min)
    start_s, _ = repeated(lambda: proc([sys.executable, "-c", "import biotool.cli"]), args.repeat,
                          min)

    print(json.dumps({
        "tools": len(tools), "tooluniverse_installed": tooluniverse_bridge.installed(),
        "offered": sum(shipped),
        "registry_load_s": round(t_load, 3),
        "policy_all_tools_s": round(shipped_s, 3),
        "policy_per_tool_us": round(per_tool_shipped * 1e6, 1),
        "naive_per_tool_us": round(per_tool_naive * 1e6, 1),
        "naive_sample": len(sample),
        "speedup_vs_naive": round(per_tool_naive / per_tool_shipped, 2),
        "cold_call_s": round(call_s, 3), "python_import_biotool_s": round(start_s, 3),
        "call_over_startup": round(call_s / start_s, 2),
    }, indent=1))


if __name__ == "__main__":
    main()
