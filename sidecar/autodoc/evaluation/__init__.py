"""Measuring retrieval: BEIR datasets and a vault's golden queries."""
