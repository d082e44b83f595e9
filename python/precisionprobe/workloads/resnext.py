"""A small ResNeXt (aggregated residual transformations) for the paper's comparison.

Bottleneck blocks: 1x1 conv, grouped 3x3 conv (cardinality groups), 1x1 conv, each followed by
BatchNorm, with ReLU(inplace=True) as torchvision writes them (one ReLU module called three times
per block) and an in-place residual add. Random images and labels, CrossEntropyLoss, SGD.

  python3 -m precisionprobe.workloads.resnext --iterations 5
"""
import torch
from torch import nn

from .training import CycledBatches, batch_loader, common_arguments, setup, train


class Bottleneck(nn.Module):
    expansion = 2

    def __init__(self, in_channels, width, cardinality, stride):
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=cardinality, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_channels))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += identity
        return self.relu(out)


class ResNeXt(nn.Module):
    def __init__(self, blocks_per_stage, cardinality, base_width, num_classes):
        super().__init__()
        channels = 16
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        stages = []
        for stage, blocks in enumerate(blocks_per_stage):
            width = base_width * cardinality * 2 ** stage
            layers = []
            for block in range(blocks):
                stride = 2 if stage > 0 and block == 0 else 1
                layers.append(Bottleneck(channels, width, cardinality, stride))
                channels = width * Bottleneck.expansion
            stages.append(nn.Sequential(*layers))
        self.stages = nn.Sequential(*stages)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, images):
        x = self.stages(self.relu(self.bn1(self.conv1(images))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def argument_parser():
    parser = common_arguments("ResNeXt training on random images", batch_size=16)
    parser.add_argument("--blocks", default="1-1-1", help="bottleneck blocks per stage")
    parser.add_argument("--cardinality", type=int, default=8)
    parser.add_argument("--base-width", type=int, default=4, help="channels per group in stage 1")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--num-classes", type=int, default=10)
    return parser


def build(args, device):
    model = ResNeXt([int(b) for b in args.blocks.split("-")], args.cardinality, args.base_width,
                    args.num_classes).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)

# Random batches made up front; longer runs (--iterations 1000000000 --seconds 60) repeat them.
DISTINCT_BATCHES = 64


def make_batches(args):
    generator = torch.Generator().manual_seed(args.seed)
    batches = [(torch.randn(args.batch_size, 3, args.image_size, args.image_size, generator=generator),
                torch.randint(0, args.num_classes, (args.batch_size,), generator=generator))
               for _ in range(min(args.iterations, DISTINCT_BATCHES))]
    return CycledBatches(batches, args.iterations)


def training_step(model, optimizer):
    def step(batch):
        images, labels = batch
        optimizer.zero_grad()
        loss = model.loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss
    return step


def main(argv=None):
    args = argument_parser().parse_args(argv)
    device = setup(args)
    model, optimizer = build(args, device)
    return train(training_step(model, optimizer), batch_loader(make_batches(args)), args.epochs,
                 device, "resnext", args.quiet, args.seconds)


if __name__ == "__main__":
    main()
