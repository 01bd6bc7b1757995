"""Training recipes side by side: models, federated algorithms, centralized arms, validation, the demo."""
