"""What a recall item is answered from: only records at or before its decision step.

- :mod:`.window`: the causal window, the most recent history as chat;
- :mod:`.conditions`: the context conditions (long context, hierarchical summary,
  self-managed memory, retrieval) and the record of what each put before the question;
- :mod:`.summary`: summaries of older history in fixed blocks;
- :mod:`.memory`: the compact JSON memory the model keeps, chunk by chunk;
- :mod:`.retrieval`: the earlier turns most relevant to a question (TF-IDF).
"""
