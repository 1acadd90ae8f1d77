"""Hooks that fire once backward has accumulated a parameter's gradient, on every torch
version horde supports."""


def register_gradient_hooks(params, on_ready):
    """Calls ``on_ready(p)`` each time backward has accumulated ``p.grad``. Returns what the
    caller must keep alive for the hooks to stay registered (before torch 2.1, the
    gradient accumulator nodes)."""
    keep_alive = []
    for p in params:
        if hasattr(p, "register_post_accumulate_grad_hook"):
            p.register_post_accumulate_grad_hook(on_ready)
        else:
            # Before torch 2.1: hook the gradient accumulator node of the parameter.
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(_calling(on_ready, p))
            keep_alive.append(accumulator)
    return keep_alive


def _calling(on_ready, p):
    return lambda *ignored: on_ready(p)


def count_backward_pass(delay, p):
    """Counts one backward pass of p against ``delay`` (parameter -> passes still to
    come); True when this was the last of the step. Horovod's error when a step has more."""
    if delay[p] <= 0:
        raise AssertionError(
            "Gradients were computed more than backward_passes_per_step times before call "
            "to step(). Increase backward_passes_per_step to accumulate gradients locally.")
    delay[p] -= 1
    return delay[p] == 0
