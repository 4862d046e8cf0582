"""FaRMA (Rashid, Wu, Fan, Li, Kristiadi and Poupart, ICML 2025): reward-guided generation with one reward-model
call per token.

The reward model is a causal LM whose logits are rewards: r(s, x) = logits(s)[x] scores every next token x of a
prefix s in one pass, and r(y) = logits(y_<T)[y_T] is a whole response's reward. Training alternates
Bradley-Terry on full responses with the max constraint logits(y_<t)[y_t] = max_x logits(y_<=t)[x] on chosen
prefixes; decoding adds w r(s, x) to the LM's log-probabilities over the candidates.

Modules: :mod:`.decoding` (the guided choice of the next token), :mod:`.api` and :mod:`.cli` (any two Hugging Face
causal LMs: ``generate``, ``sequence_reward``), :mod:`.language` (the synthetic language with a known reward and
its exact V_max / V_ref), :mod:`.nets` (the small causal networks and the losses), :mod:`.fit` (Lightning
training through alternating phases), :mod:`.decoders` (batched decoding with call counters),
:mod:`.experiment` (one seed of the experiment and the claims' numbers), :mod:`.data` (pairs and a user's JSONL).
"""
