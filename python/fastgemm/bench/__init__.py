"""The benchmark behind `python -m fastgemm bench`.

suite: the shapes and operand layouts; measure: the libraries compared, the timing protocol,
the FMA peak and the correctness guard; machine: what a run ran on; report: the table, the
JSON record, --compare and the plot; progress: the progress bar; cli: the command's options,
their checks and the run.
"""
