"""A tiny Cell2Sentence-shaped causal LM built on the fly, for tests and benchmarks.

A 2-layer Llama with a word-level tokenizer over gene symbols and the prompt's words: the
real transformers load / tokenise / generate path runs end to end in well under a second,
with no download. Untrained, its answers are words from its vocabulary, not cell types;
it checks mechanics (batching, slicing, budgets, devices), never biology.
"""

from __future__ import annotations

from pathlib import Path

from biotool.singlecell.c2s import PROMPT

CELL_TYPE_WORDS = ("T cell B cell monocyte natural killer dendritic erythrocyte platelet "
                   "CD4-positive CD8-positive alpha-beta memory naive classical").split()


def build(dest: Path, genes: list[str], tokenizer_dest: Path | None = None, layers: int = 2,
          hidden: int = 64, seed: int = 0,
          initializer_range: float = 1.0) -> tuple[Path, Path]:
    """Write weights to `dest` and the tokenizer to `tokenizer_dest` (default: `dest`)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    dest = Path(dest)
    tokenizer_dest = Path(tokenizer_dest or dest)
    pre = pre_tokenizers.Whitespace()
    words = set()
    text = " ".join([PROMPT.format(num_genes=0, organism="", cell_sentence=""), *genes,
                     *CELL_TYPE_WORDS, "Homo sapiens Mus musculus"])
    words.update(w for w, _ in pre.pre_tokenize_str(text))
    words.update(str(i) for i in range(0, 1001))
    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = {w: i for i, w in enumerate(specials + sorted(words - set(specials)))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>",
                                  bos_token="<s>", eos_token="</s>")
    torch.manual_seed(seed)
    # A wide initialisation makes the untrained model's greedy answer depend on the cell (a
    # narrow one repeats one token for every prompt), so batch-vs-single checks can fail.
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=2048, pad_token_id=0, bos_token_id=2,
                         eos_token_id=3, tie_word_embeddings=True,
                         initializer_range=initializer_range)
    model = LlamaForCausalLM(config)
    dest.mkdir(parents=True, exist_ok=True)
    tokenizer_dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(dest))
    tok.save_pretrained(str(tokenizer_dest))
    return dest, tokenizer_dest
