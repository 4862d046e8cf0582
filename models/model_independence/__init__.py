"""Independence tests for language models (Zhu, Ahmed, Kuditipudi, Liang, ICML 2025).

- :mod:`.glu`: the tiny residual GLU classifiers of the CPU reproduction (functional forward, LightningModule).
- :mod:`.checkpoints`: reading this project's checkpoints and Llama-architecture Hugging Face folders.
- :mod:`.permutations`: the permutation group Pi of the paper (App. D, Table 3) acting on weights.
- :mod:`.stats`: MATCH, SPEARMAN, FISHER, PERMTEST and the statistics phi_U, phi_H, phi_MATCH, phi_l2.
- :mod:`.data`: the digits table (torch-free); :mod:`.lit`: its Lightning loaders and the ensemble module.
- :mod:`.training` and :mod:`.experiment`: the controlled experiment (training; every test on every pair, the
  summary the report reads).
- :mod:`.api` and :mod:`.cli`: the test on two checkpoints as a function and as `icml25 model_independence test`.
"""
