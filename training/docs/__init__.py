"""The generated parts of the documentation: ``python -m training.docs <part>`` writes them, ``--check`` says which
are stale (the tests run the same check).

- ``cli``: the option tables of docs/cli.md, from the ``hf-textcluster`` argparse parsers;
- ``cards``: docs/example_model_card*.md, the cards of small models trained on a fixed toy corpus;
- ``screenshot``: docs/report.png, the HTML report opened in headless Chromium.
"""
