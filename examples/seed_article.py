"""The article's data pipeline (../shared/reference, section 2.2), ported to jisu.

Only the imports changed: ``mindspore`` -> ``jisu``. The network, AMP and ``Model.train`` parts
of the article follow in this file when jisu's training API lands.

Run: python examples/seed_article.py
"""

import numpy as np

import jisu as ms
import jisu.dataset as ds
import jisu.dataset.transforms as transforms
import jisu.dataset.vision as vision


def create_dataset(num_samples=10000, batch_size=32, rank_size=1, rank_id=0):
    """
    创建一个高效的虚拟数据集流水线
    """

    # 模拟数据生成
    def generator_func():
        for i in range(num_samples):
            # 模拟一张 224x224 的3通道图片 和 一个标签
            image = np.random.uniform(0, 255, (224, 224, 3)).astype(np.float32)
            label = np.array(i % 10).astype(np.int32)
            yield image, label

    # 1. 初始化Dataset
    # num_parallel_workers: 设置并行工作线程数，通常设置为CPU核数/卡数
    dataset = ds.GeneratorDataset(
        source=generator_func, column_names=["image", "label"], num_parallel_workers=4, shuffle=True
    )

    # 2. 定义数据增强操作 (在C++层执行，速度极快)
    # HWC -> CHW, 归一化等
    trans = [vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()]
    type_cast_op = transforms.TypeCast(ms.int32)

    # 3. 映射操作 (并行化核心)
    # python_multiprocessing=False: 建议设为False，利用C++层多线程，减少GIL锁影响
    dataset = dataset.map(operations=trans, input_columns="image", num_parallel_workers=4)
    dataset = dataset.map(operations=type_cast_op, input_columns="label", num_parallel_workers=4)

    # 4. Batch与Prefech
    dataset = dataset.batch(batch_size, drop_remainder=True)

    return dataset


if __name__ == "__main__":
    # 实例化
    ds_train = create_dataset()
    print(f"Dataset size: {ds_train.get_dataset_size()}")
    batches = list(ds_train.create_tuple_iterator(num_epochs=1))
    image, label = batches[-1]
    print(
        f"{len(batches)} batches; the last: image {tuple(image.shape)} {image.dtype}, "
        f"label {tuple(label.shape)} {label.dtype}"
    )
