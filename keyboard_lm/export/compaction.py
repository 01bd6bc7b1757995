"""Bytes the converter writes that no reader of a model file needs, taken out of the flatbuffer.

TF 2.14's converter gives every tensor a name (``MatMul_2/ReadVariableOp1``, ``SelectV2_3``) and every
computed tensor its own empty buffer. The schema's buffer 0 is the empty buffer that tensors without
data share (tensorflow/lite/schema/schema.fbs), and a name is read by nothing that serves the file: the
runtimes find a signature's tensors through its tensor map, by index, as do the Python and Java readers
of this project. So computed tensors point at buffer 0, the empty buffers no tensor uses any more are
dropped (indices renumbered), and only the tensors a signature or a subgraph names as an input or output
keep their names. About 4 KB of a paper-size file: room in the 1.4 MiB budget for the model, not for
bookkeeping. Operators, constants and their bytes are not touched, so the file computes the same numbers.
"""

from __future__ import annotations

from tensorflow.lite.tools import flatbuffer_utils


def _empty(buffer) -> bool:
    return (buffer.data is None or len(buffer.data) == 0) and not getattr(buffer, "offset", 0)


def compact(flatbuffer: bytes) -> bytes:
    """``flatbuffer`` with computed tensors on the shared empty buffer 0, unused buffers dropped and
    only the names of subgraph and signature inputs and outputs kept."""
    model = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    if not model.buffers or not _empty(model.buffers[0]):
        return flatbuffer  # not the converter's layout: leave it as it is
    named = set()
    for sd in model.signatureDefs or []:
        for t in list(sd.inputs or []) + list(sd.outputs or []):
            named.add((sd.subgraphIndex, t.tensorIndex))
    for gi, sg in enumerate(model.subgraphs):
        named.update((gi, int(t)) for t in list(sg.inputs) + list(sg.outputs))
    for gi, sg in enumerate(model.subgraphs):
        for ti, t in enumerate(sg.tensors):
            if (gi, ti) not in named:
                t.name = None
            if _empty(model.buffers[t.buffer]):
                t.buffer = 0
    used = {0} | {t.buffer for sg in model.subgraphs for t in sg.tensors}
    used |= {m.buffer for m in model.metadata or []}
    renumber, kept = {}, []
    for i, b in enumerate(model.buffers):
        if i in used:
            renumber[i] = len(kept)
            kept.append(b)
    model.buffers = kept
    for sg in model.subgraphs:
        for t in sg.tensors:
            t.buffer = renumber[t.buffer]
    for m in model.metadata or []:
        m.buffer = renumber[m.buffer]
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))
