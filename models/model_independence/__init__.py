"""Independence tests for language models (Zhu, Ahmed, Kuditipudi, Liang, ICML 2025).

- :mod:`.glu`: the tiny residual GLU classifiers of the CPU reproduction (functional forward, LightningModule).
- :mod:`.checkpoints`: reading this project's checkpoints and Llama-architecture Hugging Face folders.
- :mod:`.permutations`: the permutation group Pi of the paper (App. D, Table 3) acting on weights.
- :mod:`.stats`: MATCH, SPEARMAN, FISHER, PERMTEST and the statistics phi_U, phi_H, phi_MATCH, phi_l2.
"""
