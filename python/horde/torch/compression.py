"""Gradient compression applied around a collective, as in horovod.torch."""

import torch


class Compressor:
    """Compresses a tensor before a collective and restores it after."""

    @staticmethod
    def compress(tensor):
        """Returns the tensor to send and the context decompress needs."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends the tensor as it is."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 and restores their dtype afterwards."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point:
            return tensor.type(torch.float16), tensor.dtype
        return tensor, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None or tensor.dtype == ctx else tensor.type(ctx)


class Compression:
    """The compression algorithms: ``Compression.none`` and ``Compression.fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
