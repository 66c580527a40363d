"""The paper side: where a run's outputs go (results, tables, figures, variables), what a
notebook shows, the manuscript checks and the Quarto render. It never imports the
experiments: they write through it."""
