"""What the importer tests share."""


def randomize_batch_norms(module):
    """Fresh torchvision models have mean 0, var 1 statistics and unit
    affine parameters: give them real ones, so that what the importers do
    with batch norms is tested."""
    import torch
    g = torch.Generator().manual_seed(1)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return module


def encoder_with_dynamic_axes(batch_first):
    """A two-layer nn.TransformerEncoder (d 32, 4 heads), an example input,
    the dynamic axes naming its batch and sequence, and the type @main's
    parameter must have."""
    import torch
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=batch_first)
    module = torch.nn.TransformerEncoder(layer, 2, norm=torch.nn.LayerNorm(32)).eval()
    axes = {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}
    example = torch.randn(2, 16, 32) if batch_first else torch.randn(16, 2, 32)
    want_type = "(%batch, %seq, 32)" if batch_first else "(%seq, %batch, 32)"
    return module, example, axes, f"Tensor[{want_type}, float32]"


def check_every_length(lib, module, batch_first):
    """One build against PyTorch at several batches and lengths, 1 x 1 too."""
    import numpy as np
    import torch
    for b, n in ((1, 1), (3, 5), (2, 40)):
        x = torch.randn(b, n, 32) if batch_first else torch.randn(n, b, 32)
        with torch.no_grad():
            want = module(x).numpy()
        got = lib["main"](x.numpy()).numpy()
        assert got.shape == want.shape, (b, n)
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max(), (b, n)
