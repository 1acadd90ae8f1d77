"""Batch normalization whose batch statistics are computed over all ranks' batches."""

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from horde.torch.mpi_ops import Sum, allreduce, size

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _reduce_dims(x):
    return [d for d in range(x.dim()) if d != 1]


def _sum_over_ranks(tensor, phase):
    """The Sum allreduce of a layer's per-channel statistics, named by what it carries
    rather than numbered: the same name every step (and for every layer of that size),
    so the negotiation stays in the response cache. The reductions are synchronous, so
    two never share a name in flight."""
    name = (f"horde.sync_batch_norm.{phase}.{tensor.device.type}.{str(tensor.dtype)[6:]}."
            f"{tensor.numel()}")
    return allreduce(tensor, name=name, op=Sum)


def _stats_dtype(dtype):
    """The dtype the statistics are computed in: float32 for float16 / bfloat16 inputs
    (as torch.nn.SyncBatchNorm does), whose per-channel counts and sums overflow or lose
    precision (a count of 32*56*56 = 100352 is inf in float16, inexact in bfloat16);
    the input's own dtype otherwise."""
    return torch.float32 if dtype in _LOW_PRECISION else dtype


class _SyncBatchNormFunction(torch.autograd.Function):
    """Normalizes with the mean and variance of the global batch; the backward pass
    reduces the two per-channel sums the input gradient needs.

    Every intermediate lives on the input's device. Statistics, the reductions of the
    backward pass and the normalization itself are computed in _stats_dtype; only the
    output and the input gradient are cast back to the input's dtype, the parameter
    gradients to the parameters' dtype and the running-statistics updates to the
    buffers' dtype."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum):
        stats_dtype = _stats_dtype(x.dtype)
        dims = _reduce_dims(x)
        channels = x.shape[1]
        shape = [1, channels] + [1] * (x.dim() - 2)
        local_count = x.numel() // channels
        xs = x.to(stats_dtype)  # x itself when no widening is needed
        # Two passes (mean, then squared deviations) keep the variance accurate.
        sums = _sum_over_ranks(torch.cat([xs.sum(dims), xs.new_tensor([float(local_count)])]),
                               "sums")
        count = sums[-1:]
        mean = sums[:-1] / count
        centered = xs - mean.view(shape)
        var = _sum_over_ranks((centered * centered).sum(dims), "squares") / count
        invstd = torch.rsqrt(var + eps)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
                unbiased = var * count / torch.clamp(count - 1, min=1)
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        # The backward pass recomputes the normalized input from x (kept in its own,
        # possibly narrower, dtype) and the float statistics, as torch's batch norm does.
        ctx.save_for_backward(x, weight, mean, invstd, count)
        out = centered.mul_(invstd.view(shape))  # centered is a fresh tensor
        if weight is not None:
            out = out.mul_(weight.to(stats_dtype).view(shape)).add_(
                bias.to(stats_dtype).view(shape))
        return out.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, mean, invstd, count = ctx.saved_tensors
        stats_dtype = mean.dtype
        dims = _reduce_dims(grad_out)
        shape = [1, grad_out.shape[1]] + [1] * (grad_out.dim() - 2)
        normalized = (x.to(stats_dtype) - mean.view(shape)).mul_(invstd.view(shape))
        grad_out = grad_out.to(stats_dtype)
        # This rank's share of the parameter gradients; DistributedOptimizer reduces them.
        grad_bias = grad_out.sum(dims)
        grad_weight = (grad_out * normalized).sum(dims)
        scale = invstd if weight is None else invstd * weight.to(stats_dtype)
        sums = _sum_over_ranks(torch.cat([grad_bias, grad_weight]), "grads")
        mean_dy, mean_dy_xhat = (sums / count).chunk(2)
        grad_x = ((grad_out - mean_dy.view(shape) - normalized * mean_dy_xhat.view(shape))
                  * scale.view(shape))
        if weight is None:
            grad_weight = grad_bias = None
        else:
            grad_weight, grad_bias = grad_weight.to(weight.dtype), grad_bias.to(weight.dtype)
        return grad_x.to(x.dtype), grad_weight, grad_bias, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over N-dimensional input (N >= 2) whose training statistics come from
    the batches of all ranks, as if one process saw the global batch. In eval mode (or on
    one rank) it is plain batch normalization with the running statistics.

    float16 / bfloat16 inputs (e.g. under AMP, with the module kept in float32) are
    normalized with statistics computed in float32, like torch.nn.SyncBatchNorm; the
    output has the input's dtype and the running statistics keep their own."""

    def _check_input_dim(self, x):
        if x.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {x.dim()}D input)")

    def forward(self, x):
        self._check_input_dim(x)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        if not self.training or size() == 1:
            use_batch_stats = self.training or not self.track_running_stats
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                                use_batch_stats, momentum, self.eps)
        running_mean = self.running_mean if self.track_running_stats else None
        running_var = self.running_var if self.track_running_stats else None
        return _SyncBatchNormFunction.apply(x, self.weight, self.bias, running_mean, running_var,
                                            self.eps, momentum)
