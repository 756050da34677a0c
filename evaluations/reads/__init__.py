"""Read-only questions that pages, the API and the commands share, one module per
question: a run's stored figures (`figures`), the verdict of a run and of a list of runs
(`verdicts`), a run's results grid and its unscored checks (`results_grid`), two runs compared
(`compare`), checks over many runs (`trends`), the labelling queue's ranking (`label_queue`),
the costs page's chart (`cost_chart`), how a trial's evidence reads (`evidence_display`),
what changed between two dataset versions (`dataset_diff`) and a run's JUnit XML (`junit`)."""
