"""A corpus of real PyTorch ONNX exports with Max-family heads, for benchmarks and tests.

    python benchmarks/real_exports.py --out DIR                 # every model (in the torch venv)
    python benchmarks/real_exports.py --out DIR --only gpt2 bert
    python benchmarks/real_exports.py --list
    python benchmarks/real_exports.py --out DIR --recheck       # no torch: re-run the checker

What it makes: one `.onnx` file per (model, exporter, opset) in DIR, named
`<model>.<exporter>.opset<N>.onnx`, where the exporter is `torchscript`
(`torch.onnx.export(..., dynamo=False, opset_version=N)`) or `dynamo`
(`torch.onnx.export(..., dynamo=True)`, at its default opset and at the opsets asked for),
and `DIR/manifest.json`, which lists every file with its model, family, exporter, opset,
dynamic axes, inputs and outputs (symbolic dims included), node count, op counts (main
graph, subgraphs and model-local functions), model-local functions, external data, file
size, export time, the result of `onnx.checker.check_model(path, full_check=True)`, and the
versions of torch, torchvision, transformers, onnx and onnxscript that made it. A model or a
variant that fails to export is listed under `failures` with the exception's one-line
message; it does not stop the others.

The models are real architectures built from SMALL configs with random weights (no weights
are downloaded): torchvision classifiers (a width-reduced ResNet-18, MobileNetV3-small,
a width/depth-reduced EfficientNet-B0, SqueezeNet 1.0, ShuffleNetV2 x0.5, ViT, Swin,
ConvNeXt), segmentation (LR-ASPP MobileNetV3-large, FCN and DeepLabV3 on a narrow ResNet)
and detection (SSDlite320 MobileNetV3, Faster R-CNN MobileNetV3-320-FPN with a narrow box
head), and transformers models (BERT, GPT-2, T5, ViT, Whisper, Llama, CLIP). Each is wrapped
with its natural head of the Max family: argmax over classes, `torch.max(x, dim)` (values and
indices), `torch.topk`, `amax` of the softmax (confidence), argmax of the next-token logits,
argmax over the class channel of a segmentation map. Weights come from `torch.manual_seed(0)`
set before each model is built, so the exports are reproducible.

Each model is exported in a worker process of its own (`--worker`, one at a time, one torch
thread), so a crash or a hang (`--timeout`) loses that model only.

Install (torch is not a dependency of the project, and CI never runs this script):

    python3 -m venv /work/venv-torch && . /work/venv-torch/bin/activate && \
        pip install torch==2.14.1 torchvision==0.29.1 && \
        pip install transformers onnx onnxscript onnxruntime

`--recheck` needs only onnx: run it in the project's environment to record there, in the
manifest, the checker's verdict on every file under that onnx version.

What the last run produced is in `benchmarks/real_exports.md`.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The variants: (exporter, opset); opset None is the dynamo exporter's own default.
BASE_VARIANTS = (("torchscript", 11), ("torchscript", 17), ("dynamo", None))
EXTRA_VARIANTS = (("torchscript", 13), ("torchscript", 14), ("dynamo", 18), ("dynamo", 20))


@dataclasses.dataclass
class Built:
    """A wrapped model ready to export."""

    module: Any
    args: tuple
    input_names: list[str]
    output_names: list[str]
    # {input or output name: {axis: symbol}}; used where the variant is dynamic
    dynamic_axes: dict[str, dict[int, str]]
    head: str  # what the Max-family head computes


@dataclasses.dataclass
class Spec:
    name: str
    family: str
    about: str
    build: Callable[[], Built]
    extra: bool = False  # also the EXTRA_VARIANTS
    # which variants export with dynamic axes: torchscript at these opsets, and dynamo
    dynamic_torchscript: tuple[int, ...] = (17,)
    dynamic_dynamo: bool = True
    static_only: bool = False  # detection: dynamic axes are not asked for

    def variants(self) -> list[tuple[str, int | None]]:
        return list(BASE_VARIANTS) + (list(EXTRA_VARIANTS) if self.extra else [])


# ----------------------------------------------------------------------------- heads


def _torch():
    import torch

    return torch


def classifier_head(kind: str):
    """A module wrapping a classifier `net(x) -> logits` with a Max-family head."""
    torch = _torch()

    class Head(torch.nn.Module):
        def __init__(self, net, take: Callable[[Any], Any] | None = None) -> None:
            super().__init__()
            self.net = net
            self.take = take

        def forward(self, image):
            logits = self.net(image)
            if self.take is not None:
                logits = self.take(logits)
            label = torch.argmax(logits, -1)
            if kind == "argmax":
                return label, logits
            if kind == "max":
                values, indices = torch.max(logits, -1)
                return label, values, indices
            if kind == "topk":
                values, indices = torch.topk(logits, 3, dim=-1)
                return label, values, indices
            if kind == "amax":
                return label, torch.softmax(logits, -1).amax(-1)
            if kind == "maximum":  # elementwise Max: logits floored at a learned-free bias
                floor = torch.full_like(logits, -1.0)
                return label, torch.maximum(logits, floor).amax(-1)
            raise ValueError(kind)

    return Head


HEAD_ABOUT = {
    "argmax": "argmax over classes",
    "max": "argmax; torch.max(logits, -1) values and indices",
    "topk": "argmax; torch.topk(logits, 3)",
    "amax": "argmax; amax of the softmax (confidence)",
    "maximum": "argmax; amax of torch.maximum(logits, -1) (elementwise Max)",
}


def image_classifier(net, kind: str, size: int = 64, batch: int = 2) -> Built:
    torch = _torch()
    outputs = {
        "argmax": ["label", "logits"],
        "max": ["label", "score", "index"],
        "topk": ["label", "top3_scores", "top3_indices"],
        "amax": ["label", "confidence"],
        "maximum": ["label", "floored_max"],
    }[kind]
    return Built(
        module=classifier_head(kind)(net).eval(),
        args=(torch.randn(batch, 3, size, size),),
        input_names=["image"],
        output_names=outputs,
        dynamic_axes={"image": {0: "batch"}, **{name: {0: "batch"} for name in outputs}},
        head=HEAD_ABOUT[kind],
    )


# ----------------------------------------------------------------------------- torchvision


def narrow_resnet(widths=(16, 32, 64, 128), layers=(2, 2, 2, 2), num_classes=10):
    """torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2]) at a quarter of its width."""
    from torch import nn
    from torchvision.models.resnet import BasicBlock, ResNet

    net = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=num_classes)
    net.inplanes = widths[0]
    net.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
    net.bn1 = nn.BatchNorm2d(widths[0])
    net.layer1 = net._make_layer(BasicBlock, widths[0], layers[0])
    net.layer2 = net._make_layer(BasicBlock, widths[1], layers[1], stride=2)
    net.layer3 = net._make_layer(BasicBlock, widths[2], layers[2], stride=2)
    net.layer4 = net._make_layer(BasicBlock, widths[3], layers[3], stride=2)
    net.fc = nn.Linear(widths[3], num_classes)
    return net


def build_resnet18() -> Built:
    return image_classifier(narrow_resnet(), "argmax")


def build_mobilenet_v3_small() -> Built:
    from torchvision.models import mobilenet_v3_small

    return image_classifier(mobilenet_v3_small(weights=None, num_classes=10), "topk")


def build_efficientnet_b0() -> Built:
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf

    setting, last_channel = _efficientnet_conf("efficientnet_b0", width_mult=0.5, depth_mult=0.5)
    net = EfficientNet(setting, dropout=0.2, num_classes=10, last_channel=last_channel)
    return image_classifier(net, "amax")


def build_squeezenet1_0() -> Built:
    from torchvision.models import squeezenet1_0

    return image_classifier(squeezenet1_0(weights=None, num_classes=10), "max")


def build_shufflenet_v2_x0_5() -> Built:
    from torchvision.models import shufflenet_v2_x0_5

    return image_classifier(shufflenet_v2_x0_5(weights=None, num_classes=10), "argmax")


def build_tv_vit() -> Built:
    from torchvision.models.vision_transformer import VisionTransformer

    net = VisionTransformer(
        image_size=32,
        patch_size=8,
        num_layers=2,
        num_heads=2,
        hidden_dim=32,
        mlp_dim=64,
        num_classes=10,
    )
    return image_classifier(net, "max", size=32)


def build_swin_t() -> Built:
    from torchvision.models.swin_transformer import SwinTransformer

    net = SwinTransformer(
        patch_size=[4, 4],
        embed_dim=16,
        depths=[2, 2, 2, 2],
        num_heads=[1, 2, 2, 4],
        window_size=[4, 4],
        num_classes=10,
    )
    return image_classifier(net, "topk")


def build_convnext_tiny() -> Built:
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    setting = [
        CNBlockConfig(16, 32, 1),
        CNBlockConfig(32, 64, 1),
        CNBlockConfig(64, 128, 2),
        CNBlockConfig(128, None, 1),
    ]
    return image_classifier(ConvNeXt(setting, num_classes=10), "maximum")


def segmenter(net, about: str) -> Built:
    """`net(x)["out"]` (N, classes, H, W) → argmax over the class channel, and the
    confidence as the amax of the softmax over classes."""
    torch = _torch()

    class Segment(torch.nn.Module):
        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, image):
            scores = self.net(image)["out"]
            return torch.argmax(scores, 1), torch.softmax(scores, 1).amax(1)

    return Built(
        module=Segment(net).eval(),
        args=(torch.randn(2, 3, 64, 64),),
        input_names=["image"],
        output_names=["mask", "confidence"],
        dynamic_axes={"image": {0: "batch"}, "mask": {0: "batch"}, "confidence": {0: "batch"}},
        head=f"{about}; argmax over the class channel, amax of the softmax over it",
    )


def build_lraspp() -> Built:
    from torchvision.models.segmentation import lraspp_mobilenet_v3_large

    net = lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3)
    return segmenter(net, "LR-ASPP MobileNetV3-large, 3 classes")


def _resnet_backbone():
    from torchvision.models._utils import IntermediateLayerGetter

    return IntermediateLayerGetter(narrow_resnet(), {"layer4": "out"})


def build_fcn() -> Built:
    from torchvision.models.segmentation.fcn import FCN, FCNHead

    net = FCN(_resnet_backbone(), FCNHead(128, 3))
    return segmenter(net, "FCN on a quarter-width ResNet-18, 3 classes")


def build_deeplabv3() -> Built:
    from torchvision.models.segmentation.deeplabv3 import DeepLabHead, DeepLabV3

    net = DeepLabV3(_resnet_backbone(), DeepLabHead(128, 3))
    return segmenter(net, "DeepLabV3 (ASPP) on a quarter-width ResNet-18, 3 classes")


def detector(net, size: int, about: str) -> Built:
    """torchvision detection in eval mode: one image in, boxes, labels and scores out (the
    model's own post-processing holds TopK); the head adds the best score per box class
    (torch.max over the stacked score) as ReduceMax."""
    torch = _torch()

    class Detect(torch.nn.Module):
        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, image):
            found = self.net([image])[0]
            scores = found["scores"]
            # the best score, -inf-safe on no detection: amax over [scores, 0]
            best = torch.cat([scores, torch.zeros(1, dtype=scores.dtype)]).amax(0)
            return found["boxes"], found["labels"], scores, best

    return Built(
        module=Detect(net).eval(),
        args=(torch.rand(3, size, size),),
        input_names=["image"],
        output_names=["boxes", "labels", "scores", "best_score"],
        dynamic_axes={},
        head=f"{about}; its post-processing (TopK, NMS) plus amax of the scores",
    )


def build_ssdlite() -> Built:
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large

    net = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3)
    return detector(net, 320, "SSDlite320 MobileNetV3-large, 3 classes")


def build_fasterrcnn() -> Built:
    from torchvision.models.detection import FasterRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.backbone_utils import mobilenet_backbone
    from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead

    # fasterrcnn_mobilenet_v3_large_320_fpn's construction, with a narrow box head (its
    # TwoMLPHead of 1024 makes 50 MB of random weights)
    backbone = mobilenet_backbone(
        backbone_name="mobilenet_v3_large", weights=None, fpn=True, trainable_layers=6
    )
    anchor_sizes = ((32, 64, 128, 256, 512),) * 3
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    net = FasterRCNN(
        backbone,
        num_classes=None,
        rpn_anchor_generator=AnchorGenerator(anchor_sizes, aspect_ratios),
        box_head=TwoMLPHead(backbone.out_channels * 7 * 7, 32),
        box_predictor=FastRCNNPredictor(32, 3),
        min_size=320,
        max_size=320,
        rpn_pre_nms_top_n_test=150,
        rpn_post_nms_top_n_test=150,
        rpn_score_thresh=0.05,
    )
    return detector(net, 320, "Faster R-CNN MobileNetV3-large-320-FPN, 3 classes")


# ----------------------------------------------------------------------------- transformers


def text_inputs(batch: int = 2, seq: int = 8, vocab: int = 100):
    torch = _torch()
    ids = torch.randint(3, vocab, (batch, seq), dtype=torch.long)
    mask = torch.ones(batch, seq, dtype=torch.long)
    return ids, mask


TEXT_AXES = {0: "batch", 1: "sequence"}


def attention_kwargs(attention: str | None) -> dict[str, str]:
    """transformers' default attention (SDPA where the model has it), or the one asked for:
    "eager" is what a user picks to export SDPA models below opset 14."""
    return {} if attention is None else {"attn_implementation": attention}


def build_bert(attention: str | None = None) -> Built:
    torch = _torch()
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        **attention_kwargs(attention),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=100,
        max_position_embeddings=64,
        num_labels=3,
    )
    net = BertForSequenceClassification(config)

    class Bert(torch.nn.Module):
        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask):
            logits = self.net(input_ids=input_ids, attention_mask=attention_mask).logits
            values, indices = torch.max(logits, -1)
            return torch.argmax(logits, -1), values, indices

    return Built(
        module=Bert(net).eval(),
        args=text_inputs(),
        input_names=["input_ids", "attention_mask"],
        output_names=["label", "score", "index"],
        dynamic_axes={
            "input_ids": TEXT_AXES,
            "attention_mask": TEXT_AXES,
            "label": {0: "batch"},
            "score": {0: "batch"},
            "index": {0: "batch"},
        },
        head="sequence classification: argmax; torch.max(logits, -1) values and indices",
    )


def causal_lm(net, about: str, topk: bool) -> Built:
    """Next-token head: argmax of the last position's logits (greedy decoding), and with
    `topk` the 4 best tokens, else the amax of the log-softmax."""
    torch = _torch()

    class NextToken(torch.nn.Module):
        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask):
            logits = self.net(
                input_ids=input_ids, attention_mask=attention_mask, use_cache=False
            ).logits[:, -1, :]
            token = torch.argmax(logits, -1)
            if topk:
                values, indices = torch.topk(logits, 4, dim=-1)
                return token, values, indices
            return token, torch.log_softmax(logits, -1).amax(-1)

    outputs = ["next_token", "top4_logits", "top4_tokens"] if topk else ["next_token", "logprob"]
    return Built(
        module=NextToken(net).eval(),
        args=text_inputs(),
        input_names=["input_ids", "attention_mask"],
        output_names=outputs,
        dynamic_axes={
            "input_ids": TEXT_AXES,
            "attention_mask": TEXT_AXES,
            **{name: {0: "batch"} for name in outputs},
        },
        head=f"{about}: argmax of the next-token logits; "
        + ("torch.topk(logits, 4)" if topk else "amax of the log-softmax"),
    )


def build_gpt2(attention: str | None = None) -> Built:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_embd=32,
        n_layer=2,
        n_head=2,
        vocab_size=100,
        n_positions=64,
        **attention_kwargs(attention),
    )
    return causal_lm(GPT2LMHeadModel(config), "GPT-2", topk=False)


def build_llama(attention: str | None = None) -> Built:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        **attention_kwargs(attention),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
        max_position_embeddings=64,
    )
    return causal_lm(LlamaForCausalLM(config), "Llama (grouped-query attention)", topk=True)


def seq2seq(
    net, encoder_input: str, encoder_args: tuple, about: str, decoder_mask: bool = False
) -> Built:
    """Encoder-decoder forward with decoder_input_ids; argmax and max of the last decoder
    position's logits. With `decoder_mask`, a decoder_attention_mask of ones is passed (made
    inside the graph from decoder_input_ids)."""
    torch = _torch()

    class Seq2Seq(torch.nn.Module):
        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, encoder_in, decoder_input_ids):
            extra = {}
            if decoder_mask:
                extra["decoder_attention_mask"] = torch.ones_like(decoder_input_ids)
            logits = self.net(
                **{encoder_input: encoder_in},
                decoder_input_ids=decoder_input_ids,
                use_cache=False,
                **extra,
            ).logits[:, -1, :]
            values, indices = torch.max(logits, -1)
            return torch.argmax(logits, -1), values, indices

    decoder_ids = torch.randint(3, 100, (2, 4), dtype=torch.long)
    encoder_axes = TEXT_AXES if encoder_input == "input_ids" else {0: "batch"}
    return Built(
        module=Seq2Seq(net).eval(),
        args=(*encoder_args, decoder_ids),
        input_names=[encoder_input, "decoder_input_ids"],
        output_names=["next_token", "score", "index"],
        dynamic_axes={
            encoder_input: encoder_axes,
            "decoder_input_ids": {0: "batch", 1: "decoder_sequence"},
            "next_token": {0: "batch"},
            "score": {0: "batch"},
            "index": {0: "batch"},
        },
        head=f"{about}: argmax of the last decoder position's logits; torch.max values, indices",
    )


def build_t5(attention: str | None = None) -> Built:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        **attention_kwargs(attention),
        d_model=32,
        d_ff=64,
        d_kv=16,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        vocab_size=100,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    ids, _ = text_inputs()
    return seq2seq(T5ForConditionalGeneration(config), "input_ids", (ids,), "T5")


def build_whisper(attention: str | None = None) -> Built:
    torch = _torch()
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    config = WhisperConfig(
        **attention_kwargs(attention),
        vocab_size=100,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=32,
        max_target_positions=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        suppress_tokens=[],
        begin_suppress_tokens=[],
    )
    features = torch.randn(2, 16, 64)  # (batch, mel bins, 2 * max_source_positions)
    # Without a decoder mask, transformers looks for packed sequences with torch.diff, which
    # the TorchScript exporter has no symbolic for (aten::diff, at any opset).
    return seq2seq(
        WhisperForConditionalGeneration(config),
        "input_features",
        (features,),
        "Whisper (decoder_attention_mask of ones)",
        decoder_mask=True,
    )


def build_hf_vit(attention: str | None = None) -> Built:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        **attention_kwargs(attention),
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=10,
    )
    net = ViTForImageClassification(config)
    torch = _torch()

    class Logits(torch.nn.Module):
        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, pixel_values):
            return self.net(pixel_values=pixel_values).logits

    return image_classifier(Logits(net), "amax", size=32)


def build_clip(attention: str | None = None) -> Built:
    torch = _torch()
    from transformers import CLIPConfig, CLIPModel

    config = CLIPConfig(
        **attention_kwargs(attention),
        text_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "vocab_size": 100,
            "max_position_embeddings": 16,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
        projection_dim=16,
    )
    net = CLIPModel(config)

    class ZeroShot(torch.nn.Module):
        """Zero-shot classification: the best caption per image (argmax), and each
        caption's best image score (torch.max over images)."""

        def __init__(self, net) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids, attention_mask, pixel_values):
            out = self.net(
                input_ids=input_ids, attention_mask=attention_mask, pixel_values=pixel_values
            )
            per_image = out.logits_per_image
            values, indices = torch.max(per_image, 0)
            return torch.argmax(per_image, -1), values, indices

    ids, mask = text_inputs(batch=3, seq=8)
    return Built(
        module=ZeroShot(net).eval(),
        args=(ids, mask, torch.randn(2, 3, 32, 32)),
        input_names=["input_ids", "attention_mask", "pixel_values"],
        output_names=["caption", "best_image_score", "best_image"],
        dynamic_axes={
            "input_ids": {0: "captions", 1: "sequence"},
            "attention_mask": {0: "captions", 1: "sequence"},
            "pixel_values": {0: "images"},
            "caption": {0: "images"},
            "best_image_score": {0: "captions"},
            "best_image": {0: "captions"},
        },
        head="zero-shot CLIP: argmax over captions; torch.max over images (values, indices)",
    )


SPECS = [
    Spec("resnet18", "torchvision-classification", "ResNet-18, quarter width", build_resnet18,
         extra=True, dynamic_torchscript=(13, 17)),
    Spec("mobilenet_v3_small", "torchvision-classification", "MobileNetV3-small",
         build_mobilenet_v3_small, extra=True),
    Spec("efficientnet_b0", "torchvision-classification", "EfficientNet-B0, width/depth 0.5",
         build_efficientnet_b0, extra=True, dynamic_torchscript=(14, 17)),
    Spec("squeezenet1_0", "torchvision-classification", "SqueezeNet 1.0", build_squeezenet1_0,
         extra=True, dynamic_torchscript=(11, 17)),
    Spec("shufflenet_v2_x0_5", "torchvision-classification", "ShuffleNetV2 x0.5",
         build_shufflenet_v2_x0_5),
    Spec("vit_b_16", "torchvision-classification", "VisionTransformer, 32x32, 2 layers, dim 32",
         build_tv_vit, extra=True),
    Spec("swin_t", "torchvision-classification", "SwinTransformer, dim 16, depths 2,2,2,2",
         build_swin_t),
    Spec("convnext_tiny", "torchvision-classification", "ConvNeXt, dims 16-128",
         build_convnext_tiny),
    Spec("lraspp_mobilenet_v3_large", "torchvision-segmentation", "LR-ASPP MobileNetV3-large",
         build_lraspp),
    Spec("fcn_resnet_narrow", "torchvision-segmentation", "FCN, quarter-width ResNet-18",
         build_fcn),
    Spec("deeplabv3_resnet_narrow", "torchvision-segmentation",
         "DeepLabV3, quarter-width ResNet-18", build_deeplabv3),
    Spec("ssdlite320_mobilenet_v3_large", "torchvision-detection", "SSDlite320",
         build_ssdlite, static_only=True),
    Spec("fasterrcnn_mobilenet_v3_large_320_fpn", "torchvision-detection",
         "Faster R-CNN MobileNetV3-320-FPN, narrow box head", build_fasterrcnn, static_only=True),
    Spec("bert", "transformers", "BertForSequenceClassification", build_bert, extra=True),
    Spec("gpt2", "transformers", "GPT2LMHeadModel", build_gpt2, extra=True),
    Spec("t5", "transformers", "T5ForConditionalGeneration", build_t5),
    Spec("vit", "transformers", "ViTForImageClassification", build_hf_vit),
    Spec("whisper", "transformers", "WhisperForConditionalGeneration", build_whisper),
    Spec("llama", "transformers", "LlamaForCausalLM", build_llama, extra=True),
    Spec("clip", "transformers", "CLIPModel (zero-shot)", build_clip),
]  # fmt: skip
SPEC_BY_NAME = {spec.name: spec for spec in SPECS}


# ----------------------------------------------------------------------------- graph facts


def one_line(error: BaseException) -> str:
    """The exception's type and first line; for the dynamo exporter's long report, the line
    of its "Exception summary" (the underlying error), without colour codes."""
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if "## Exception summary" in lines:
        after = lines[lines.index("## Exception summary") + 1 :]
        if after:
            return f"{type(error).__name__}: {after[0]}"[:500]
    text = lines[0] if lines else ""
    return f"{type(error).__name__}: {text}"[:500]


def dims_of(value) -> list[int | str | None]:
    if not value.type.HasField("tensor_type"):
        return []
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return []
    return [
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim
    ]


def op_key(node) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"


def graph_facts(path: Path) -> dict[str, Any]:
    """What the manifest says of one exported file (read without its external data)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    ops: collections.Counter[str] = collections.Counter()
    subgraph_nodes = 0

    def count(graph, top: bool) -> None:
        nonlocal subgraph_nodes
        for node in graph.node:
            ops[op_key(node)] += 1
            if not top:
                subgraph_nodes += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    count(attr.g, False)
                for sub in attr.graphs:
                    count(sub, False)

    count(model.graph, True)
    function_nodes = 0
    for function in model.functions:
        for node in function.node:
            ops[op_key(node)] += 1
            function_nodes += 1
    external = sorted(
        {
            entry.value
            for tensor in model.graph.initializer
            if tensor.data_location == onnx.TensorProto.EXTERNAL
            for entry in tensor.external_data
            if entry.key == "location"
        }
    )
    size = path.stat().st_size + sum((path.parent / name).stat().st_size for name in external)
    family = ("ArgMax", "ArgMin", "Max", "Min", "ReduceMax", "ReduceMin", "TopK")
    return {
        "opset_imports": {imp.domain or "ai.onnx": imp.version for imp in model.opset_import},
        "ir_version": model.ir_version,
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "inputs": {v.name: dims_of(v) for v in model.graph.input},
        "outputs": {v.name: dims_of(v) for v in model.graph.output},
        "symbolic_dims": any(
            isinstance(d, str) or d is None
            for v in [*model.graph.input, *model.graph.output]
            for d in dims_of(v)
        ),
        "node_count": len(model.graph.node),
        "subgraph_node_count": subgraph_nodes,
        "function_node_count": function_nodes,
        "functions": [f"{f.domain}::{f.name}" for f in model.functions],
        "initializers": len(model.graph.initializer),
        "external_data": external,
        "size_bytes": size,
        "max_family_ops": {op: ops[op] for op in family if ops[op]},
        "op_counts": dict(sorted(ops.items())),
    }


def check(path: Path) -> dict[str, Any]:
    import onnx

    started = time.perf_counter()
    try:
        onnx.checker.check_model(str(path), full_check=True)
        ok, error = True, None
    except Exception as exc:
        ok, error = False, one_line(exc)
    return {
        "onnx": onnx.__version__,
        "python": sys.executable,
        "ok": ok,
        "error": error,
        "seconds": round(time.perf_counter() - started, 3),
    }


# ----------------------------------------------------------------------------- exporting


def file_name(model: str, exporter: str, opset: int) -> str:
    return f"{model}.{exporter}.opset{opset}.onnx"


def dynamo_default_opset() -> int:
    try:
        from torch.onnx._internal.exporter import _constants

        return int(_constants.TORCHLIB_OPSET)
    except Exception:  # the exporter's layout moved: ask onnxscript's torchlib
        return 18


def dynamo_export(built: Built, path: Path, opset: int, axes) -> None:
    """The dynamo exporter, as a user calls it; dynamic axes become `dynamic_shapes` (one
    dict per positional input, every named axis `Dim.DYNAMIC`)."""
    import torch

    shapes = None
    if axes:
        shapes = tuple(
            {axis: torch.export.Dim.DYNAMIC for axis in axes.get(name, {})} or None
            for name in built.input_names
        )
    torch.onnx.export(
        built.module,
        built.args,
        str(path),
        dynamo=True,
        opset_version=opset,
        input_names=built.input_names,
        output_names=built.output_names,
        dynamic_shapes=shapes,
    )


def export_one(spec: Spec, built: Built, exporter: str, opset: int, out: Path) -> dict:
    """Export one variant to `out`; returns its manifest entry (raises on failure)."""
    import torch

    path = out / file_name(spec.name, exporter, opset)
    for stale in [path, *out.glob(path.name + "*.data"), Path(str(path) + ".data")]:
        if stale.exists():
            stale.unlink()
    if exporter == "torchscript":
        dynamic = not spec.static_only and opset in spec.dynamic_torchscript
    else:
        dynamic = not spec.static_only and spec.dynamic_dynamo and opset == dynamo_default_opset()
    axes = built.dynamic_axes if dynamic else None
    dynamic_error = None
    started = time.perf_counter()
    with torch.no_grad():
        if exporter == "torchscript":
            torch.onnx.export(
                built.module,
                built.args,
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=built.input_names,
                output_names=built.output_names,
                dynamic_axes=axes,
            )
        else:
            try:
                dynamo_export(built, path, opset, axes)
            except Exception as exc:
                if axes is None:
                    raise
                # keep the model: export it static, and say why it is not dynamic
                dynamic_error = one_line(exc)
                axes = None
                dynamo_export(built, path, opset, None)
    seconds = time.perf_counter() - started
    if not path.exists():
        raise RuntimeError(f"the exporter returned but wrote no {path.name}")
    entry = {
        "file": path.name,
        "model": spec.name,
        "family": spec.family,
        "about": spec.about,
        "head": built.head,
        "exporter": exporter,
        "opset": opset,
        "dynamic_axes": {k: {str(a): s for a, s in v.items()} for k, v in (axes or {}).items()},
        "export_seconds": round(seconds, 2),
    }
    if dynamic_error:
        entry["dynamic_export_error"] = dynamic_error
    entry.update(graph_facts(path))
    entry["check"] = check(path)
    return entry


def run_worker(name: str, out: Path, variants: list[tuple[str, int | None]] | None) -> dict:
    """Build one model and export its variants; returns {"files": [...], "failures": [...]}."""
    import torch

    torch.set_num_threads(1)
    spec = SPEC_BY_NAME[name]
    files: list[dict] = []
    failures: list[dict] = []
    torch.manual_seed(0)
    try:
        built = spec.build()
    except Exception as exc:
        traceback.print_exc()
        return {
            "files": [],
            "failures": [
                {"model": name, "exporter": "*", "opset": None, "stage": "build",
                 "error": one_line(exc)}
            ],
            "dynamo_default_opset": dynamo_default_opset(),
        }  # fmt: skip
    default = dynamo_default_opset()
    for exporter, opset in variants or spec.variants():
        opset = default if opset is None else opset
        if any(f["exporter"] == exporter and f["opset"] == opset for f in files):
            continue  # the dynamo default is one of the opsets asked for
        print(f"[{name}] {exporter} opset {opset} ...", flush=True)
        torch.manual_seed(0)
        try:
            try:
                entry = export_one(spec, built, exporter, opset, out)
            except Exception as exc:
                # as a user would, on the two errors with a known remedy
                if "_native_multi_head_attention" in str(exc):
                    # nn.MultiheadAttention's inference fast path: turn it off
                    print(f"[{name}] MHA fast path does not export: fast path off")
                    torch.backends.mha.set_fastpath_enabled(False)
                    try:
                        entry = export_one(spec, built, exporter, opset, out)
                    finally:
                        torch.backends.mha.set_fastpath_enabled(True)
                    entry["mha_fastpath"] = "disabled"
                    entry["fastpath_export_error"] = one_line(exc)
                elif "scaled_dot_product_attention" in str(exc) and spec.family == "transformers":
                    # the same model (same seed) with eager attention
                    print(f"[{name}] SDPA does not export at opset {opset}: eager attention")
                    torch.manual_seed(0)
                    entry = export_one(spec, spec.build(attention="eager"), exporter, opset, out)
                    entry["attn_implementation"] = "eager"
                    entry["sdpa_export_error"] = one_line(exc)
                else:
                    raise
        except Exception as exc:
            traceback.print_exc()
            failures.append(
                {"model": name, "exporter": exporter, "opset": opset, "stage": "export",
                 "file": file_name(name, exporter, opset), "error": one_line(exc)}
            )  # fmt: skip
            continue
        print(
            f"[{name}] {entry['file']}: {entry['node_count']} nodes, "
            f"{entry['size_bytes'] / 1e6:.2f} MB, {entry['export_seconds']} s, "
            f"max family {entry['max_family_ops']}, check {entry['check']['ok']}",
            flush=True,
        )
        files.append(entry)
    return {"files": files, "failures": failures, "dynamo_default_opset": default}


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for module in ("torch", "torchvision", "transformers", "onnx", "onnxscript", "onnxruntime"):
        try:
            found[module] = __import__(module).__version__
        except Exception:
            found[module] = "not installed"
    return found


def script_commit() -> str | None:
    """The commit this script was run from (with "+dirty" when it has changes), if in git."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--", Path(__file__).name],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return None
    return (head + ("+dirty" if dirty else "")) or None


def run_all(out: Path, names: list[str], timeout: float) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    parts = out / ".parts"
    parts.mkdir(exist_ok=True)
    manifest_path = out / "manifest.json"
    previous = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    # --only NAME keeps the other models' entries of an earlier run
    files = [f for f in previous.get("files", []) if f["model"] not in names]
    failures = [f for f in previous.get("failures", []) if f["model"] not in names]
    timings = {k: v for k, v in previous.get("model_seconds", {}).items() if k not in names}
    default_opset = previous.get("dynamo_default_opset")
    started = time.perf_counter()
    for name in names:
        part = parts / f"{name}.json"
        part.unlink(missing_ok=True)
        began = time.perf_counter()
        command = [sys.executable, __file__, "--out", str(out), "--worker", name]
        print(f"== {name}", flush=True)
        try:
            done = subprocess.run(command, timeout=timeout, check=False)
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = f"timed out after {timeout:.0f} s"
        timings[name] = round(time.perf_counter() - began, 1)
        if part.exists():
            result = json.loads(part.read_text())
            files += result["files"]
            default_opset = result["dynamo_default_opset"]
            failures += result["failures"]
        else:
            failures.append(
                {"model": name, "exporter": "*", "opset": None, "stage": "worker",
                 "error": f"the worker process ended without a result (exit {code})"}
            )  # fmt: skip
    order = {spec.name: i for i, spec in enumerate(SPECS)}
    files.sort(
        key=lambda f: (order.get(f["model"], 99), f["exporter"] != "torchscript", f["opset"])
    )
    failures.sort(key=lambda f: (order.get(f["model"], 99), f["exporter"], f["opset"] or 0))
    manifest = {
        "made_by": "benchmarks/real_exports.py",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "script_commit": script_commit(),
        "dynamo_default_opset": default_opset,
        "seconds_this_run": round(time.perf_counter() - started, 1),
        "model_seconds": timings,
        "summary": summarize(files, failures),
        "files": files,
        "failures": failures,
        "rechecks": previous.get("rechecks", []),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def summarize(files: list[dict], failures: list[dict]) -> dict[str, Any]:
    by = collections.Counter(f"{f['exporter']} opset{f['opset']}" for f in files)
    families = collections.Counter(f["family"] for f in files)
    return {
        "files": len(files),
        "failures": len(failures),
        "checker_ok": sum(1 for f in files if f["check"]["ok"]),
        "by_exporter_opset": dict(sorted(by.items())),
        "by_family": dict(sorted(families.items())),
        "models": len({f["model"] for f in files}),
        "total_bytes": sum(f["size_bytes"] for f in files),
        "with_symbolic_dims": sum(1 for f in files if f["symbolic_dims"]),
        "with_external_data": sum(1 for f in files if f["external_data"]),
        "with_functions": sum(1 for f in files if f["functions"]),
    }


def recheck(out: Path) -> dict:
    """Run the checker on every file of the manifest in this environment, and record it."""
    import onnx

    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    results = {}
    for entry in manifest["files"]:
        result = check(out / entry["file"])
        results[entry["file"]] = {"ok": result["ok"], "error": result["error"]}
        entry.setdefault("rechecks", [])
        entry["rechecks"] = [r for r in entry["rechecks"] if r["python"] != sys.executable]
        entry["rechecks"].append(result)
        print(f"{entry['file']}: {'ok' if result['ok'] else result['error']}")
    record = {
        "python": sys.executable,
        "onnx": onnx.__version__,
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "ok": sum(1 for r in results.values() if r["ok"]),
        "files": len(results),
    }
    manifest["rechecks"] = [
        r for r in manifest.get("rechecks", []) if r["python"] != sys.executable
    ] + [record]
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="the corpus directory")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these models only")
    parser.add_argument("--list", action="store_true", help="list the models and variants")
    parser.add_argument("--recheck", action="store_true", help="re-run the checker only")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per model")
    parser.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.list:
        for spec in SPECS:
            variants = ", ".join(
                f"{exporter} {opset or 'default'}" for exporter, opset in spec.variants()
            )
            print(f"{spec.name:40} {spec.family:28} {variants}")
        return 0
    if options.out is None:
        parser.error("--out DIR is required")
    if options.worker:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        result = run_worker(options.worker, options.out, None)
        part = options.out / ".parts" / f"{options.worker}.json"
        part.write_text(json.dumps(result, indent=1))
        return 0
    if options.recheck:
        record = recheck(options.out)
        print(f"{record['ok']} of {record['files']} pass the full check with onnx {record['onnx']}")
        return 0 if record["ok"] == record["files"] else 1
    names = options.only or [spec.name for spec in SPECS]
    unknown = [name for name in names if name not in SPEC_BY_NAME]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}; see --list")
    manifest = run_all(options.out, names, options.timeout)
    print(json.dumps(manifest["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
