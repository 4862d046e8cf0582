"""GSM-Infinity (Zhou et al., ICML 2025): a generator of long-context reasoning problems whose difficulty is
controlled exactly. ``symbolic`` (the symbolic subset and its text-only solver), ``realistic`` (the medium and
hard subsets), ``scoring`` (answer extraction, accuracy per op, pass@k, AUC, the sigmoid fit), ``reasoners``
(stand-ins for an LLM: the exact solver, a planted reasoner with a known answer, the spec's h-round reasoner and a
derivation-following BM25 retriever)."""
