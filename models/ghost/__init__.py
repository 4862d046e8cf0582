"""GHOST (Qian et al., ICML 2025): one-shot federated graph learning with proxy models and topology-consistent
knowledge retention. ``config`` (hyper-parameters and the five switches where the official code and the former
"paper reading" differ), ``graph`` (data: SBM, digits k-NN, Planetoid; propagation), ``partition`` (the federated
split), ``nets`` (GCN, generator, generator bank), ``losses`` (feature, FGW, criterion, retention), ``lit``
(Lightning loops), ``api`` (the Python entry), ``experiment`` (one run's trainings, evaluation and summaries),
``store`` (safetensors artifacts)."""
