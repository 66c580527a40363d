"""The experiment behind each notebook, one module each (its sections may have modules
of their own): a ``Parameters`` dataclass (the notebook's parameters cell is generated
from it), ``TITLE``, ``PAPER_SCALE`` (the parameter set of the paper's scale), optionally ``NAMED_SETS`` (the
paper's other parameter sets by title, each a run of its own), ``MANUSCRIPT``
(the variables and tables the manuscript reads from it, :mod:`contextecho.paper.declared`),
its stage functions and ``STAGES`` (one notebook cell each, :mod:`.spine`), and
``run(params)``, which runs the stages in order and returns a
:class:`~contextecho.paper.show.Result`. Experiments do not import each other; what they
share is in modules named for it: :mod:`.parameter_sets`, :mod:`.item_ids`,
:mod:`.selection`, :mod:`.scores`, :mod:`.protocol_record`, :mod:`.distributions` and
:mod:`.spine`."""
