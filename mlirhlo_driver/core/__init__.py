"""The compile core: every door's way from an input to a stage.

    input --programs()--> Program --Compiled(program, target)--> .stage(name)
                              |                                     |
                         .optimize(pipeline)                 stage cache (content)

* core/program.py: :class:`~mlirhlo_driver.core.program.Program`, what every input
  becomes (files, dump directories, split chunks, JAX functions), with an identity made
  from its content; parsed when first needed.
* core/compiled.py: :class:`~mlirhlo_driver.core.compiled.Compiled`, one program for one
  target (targets.Target: platform, GPU spec, XLA flags): stages read one XLA compile
  (stages.base.StageRequest), and the stage cache first.
* core/cache.py: the stage cache, keyed by content, shared by every door.
* core/progress.py: progress for work that takes a while, given to a callback.

The commands (commands/, batch/) and the Python API (api.py) are built on these; the
XLA-named tools too.
"""
