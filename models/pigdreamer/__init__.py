"""PIGDreamer: privileged-information world models for safe RL (Huang et al., ICML 2025): the method. TODO: modules and their math."""
