"""A Hugging Face fast tokenizer from the vocabulary a GGUF file carries (``tokenizer.ggml.*``:
tokens, BPE merges, special ids), for h200_smollm2.py: the device has ``tokenizers`` (a
transformers dependency) but no model hub. Byte-level BPE with single-digit splitting, as
SmolLM2's tokenizer is."""

import struct

# GGUF metadata value types (the GGUF v3 file format).
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def read_metadata(path):
    """The key/value metadata of a GGUF v2/v3 file (arrays as lists)."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        version, _tensors, count = struct.unpack("<IQQ", f.read(20))
        if version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {version}")

        def string():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8", errors="replace")

        def value(kind):
            if kind == _STRING:
                return string()
            if kind == _ARRAY:
                inner, n = struct.unpack("<IQ", f.read(12))
                return [value(inner) for _ in range(n)]
            fmt = _SCALARS[kind]
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        meta = {}
        for _ in range(count):
            key = string()
            (kind,) = struct.unpack("<I", f.read(4))
            meta[key] = value(kind)
        return meta


def tokenizer(path):
    """A transformers PreTrainedTokenizerFast built from the GGUF's vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    meta = read_metadata(path)
    tokens = meta["tokenizer.ggml.tokens"]
    merges = [tuple(m.split(" ", 1)) for m in meta.get("tokenizer.ggml.merges", [])]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    special = {}
    for role in ("bos", "eos", "unknown", "padding"):
        i = meta.get(f"tokenizer.ggml.{role}_token_id")
        if i is not None and i < len(tokens):
            special[{"unknown": "unk", "padding": "pad"}.get(role, role) + "_token"] = tokens[i]
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special)


if __name__ == "__main__":
    import sys

    m = read_metadata(sys.argv[1])
    print({k: (v if not isinstance(v, list) else f"[{len(v)} items]") for k, v in m.items()})
