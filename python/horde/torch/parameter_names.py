"""The names the gradients' reductions of a DistributedOptimizer go by."""


def parameter_names(param_groups, named_parameters):
    """Maps each parameter to its name, checking the names given: the optimizer's
    ``_parameter_names``, as Horovod's (a name from named_parameters, else
    ``allreduce.noname.<i>``, counted over all parameter groups so names never repeat).
    Its reductions go by these names with a prefix of the optimizer's."""
    all_params = [p for group in param_groups for p in group["params"]]
    if named_parameters is None:
        return {p: f"allreduce.noname.{i}" for i, p in enumerate(all_params)}
    named_parameters = list(named_parameters)
    if any(not isinstance(item, tuple) or len(item) != 2 for item in named_parameters):
        raise ValueError("named_parameters should be a sequence of (name, parameter) tuples, "
                         "usually model.named_parameters()")
    names = [name for name, _ in named_parameters]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError("parameter names in named_parameters must be unique; duplicates: "
                         + ", ".join(duplicates))
    by_param = {p: name for name, p in named_parameters}
    unnamed = [p for p in all_params if p not in by_param]
    if unnamed:
        raise ValueError(f"named_parameters was given, but {len(unnamed)} of the optimizer's "
                         "parameters are not in it; pass model.named_parameters() of the model "
                         "whose parameters the optimizer holds")
    return by_param
