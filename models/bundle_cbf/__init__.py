"""Measurement-induced bundles, mCBF and Neural ODE (Zheng & Mei, ICML 2025): the method. TODO: modules and their math."""
