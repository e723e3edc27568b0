"""The sample bots, each a script: ``python sample_bots/NAME.py`` (see each file's docstring).

This file only makes the folder a package for the type checker, so that ``random.py`` here is
``sample_bots.random`` and not mistaken for the standard library's module.
"""
