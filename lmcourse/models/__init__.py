"""From-scratch models, each checked against its PyTorch / Hugging Face reference."""
