"""The evaluations pages and their forms, one module per page group: the run list, run, trial
and costs pages (`runs`), starting a run (`start_run`, its form `start_run_form`), comparing two
runs (`compare`), trends (`trends`), the labelling queue and calibration (`labels`), schedules
(`schedules`), run summaries (`summaries`) and the navigation every page shows
(`context_processors`). What they read lives in `evaluations.reads`, shared with the API and
the commands."""
