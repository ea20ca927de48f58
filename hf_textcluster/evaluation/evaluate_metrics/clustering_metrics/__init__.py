# The metric script of this folder is loaded with `evaluate.load(<this folder>)`, not imported as a submodule.
