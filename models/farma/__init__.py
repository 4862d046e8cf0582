"""FaRMA: reward-guided generation, one reward call per token (Rashid et al., ICML 2025): the method. TODO: modules and their math."""
