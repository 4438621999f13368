"""Data type names, so that MindSpore code such as ``TypeCast(ms.int32)`` ports by import.

They are torch dtypes; jisu ops accept them wherever a dtype is expected.
"""

import torch

bool_ = torch.bool
int8 = torch.int8
int16 = torch.int16
int32 = torch.int32
int64 = torch.int64
uint8 = torch.uint8
float16 = torch.float16
bfloat16 = torch.bfloat16
float32 = torch.float32
float64 = torch.float64
