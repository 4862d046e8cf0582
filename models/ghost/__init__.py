"""GHOST (Qian et al., ICML 2025): one-shot federated graph learning with proxy models and topology-consistent
knowledge retention. ``graph`` (data, propagation), ``partition`` (the federated split), ``nets`` (GCN,
generator), ``losses`` (feature, FGW, criterion, retention), ``lit`` (Lightning loops), ``api`` (the Python
entry), ``store`` (safetensors artifacts)."""
