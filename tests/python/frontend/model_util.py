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
