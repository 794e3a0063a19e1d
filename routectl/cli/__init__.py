"""The command line: ``routectl run``, ``plan``, ``providers`` and command plugins.

* :mod:`~routectl.cli.main`: the entry point and the ``routectl.commands`` plugins;
* :mod:`~routectl.cli.flags`: the flags of ``run`` and ``plan``, built from the settings;
* :mod:`~routectl.cli.dropin`: a cloud-controller-manager's command line and cloud config;
* :mod:`~routectl.cli.app`: ``routectl run`` and ``routectl plan``;
* :mod:`~routectl.cli.preview`: how ``routectl plan`` prints a plan.
"""
