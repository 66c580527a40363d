"""contextecho: does a model's assistant persona survive long agentic-coding sessions?"""
