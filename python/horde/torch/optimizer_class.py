"""The class of a wrapped optimizer: the user's own optimizer class with horde's
behaviour mixed in before it."""


def wrap_optimizer_class(mixin, optimizer):
    """A subclass of ``optimizer``'s class, with the same name, whose method resolution
    puts ``mixin`` first. The mixin's methods reach the user's optimizer with ``super()``,
    so a user class derived from the result can call ``super()`` too. (Horovod copies the
    mixin's methods into the new class and calls ``super(self.__class__, self)``, which
    recurses forever in such a derived class.)"""
    if isinstance(optimizer, mixin):
        raise ValueError(f"the optimizer is already a horde DistributedOptimizer "
                         f"({type(optimizer).__name__}); wrap the plain optimizer once")
    base = type(optimizer)
    return type(base.__name__, (mixin, base), {"__doc__": base.__doc__})
