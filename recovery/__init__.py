"""Replica models, verification, protocol replay, repair plans and their application."""
