"""Local stand-ins for remote services: OpenAI-compatible servers on loopback."""
