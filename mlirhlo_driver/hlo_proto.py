"""HloModuleProto / HloProto: binary wire format <-> protobuf text format, in pure Python.

jaxlib hands out serialized ``xla.HloModuleProto`` bytes but no protobuf
descriptors and no text format, and the ``protobuf`` package is not a
dependency. This module carries its own schema table for every message
reachable from ``xla.HloProto`` (hlo.proto, xla_data.proto, as compiled into
jaxlib 0.10.2) and a small codec around it.

Public API::

    decode(data, message="HloModuleProto") -> Message    binary -> tree
    encode(msg, deterministic=False) -> bytes             tree -> binary
    to_text(msg) -> str                                   tree -> .pbtxt
    parse_text(text, message="HloModuleProto") -> Message .pbtxt -> tree
    looks_like_hlo_proto(data) -> "HloModuleProto" | "HloProto" | None
    module_proto_from_any(data) -> bytes                  HloProto/HloModuleProto(.gz) -> HloModuleProto

A :class:`Message` is a list of ``(field_name, value)`` pairs in wire/text
order; a repeated field is one pair per element. Values are ``int``, ``bool``,
``float``, ``str`` (string fields; ``bytes`` if not valid UTF-8), ``bytes``,
enum names as ``str`` (an ``int`` for numbers the enum does not name) and
nested :class:`Message`. Fields the schema does not know are kept as
``(field_number, Unknown(wire_type, data))`` pairs, printed as numbered fields
(``12345: 7``, ``12345: 0x0000000a``, ``12345: "..."`` or ``12345 { ... }``,
like C++) and written back unchanged.

Round trips:

* ``encode(decode(b)) == b`` for every proto jaxlib/XLA writes (canonical
  encoding: minimal varints, packed repeated scalars, one record per packed
  run). Field order is kept as read, so unusual orders survive; what is
  normalised is only non-canonical *encoding*, which C++ never writes:
  over-long varints, repeated scalars sent unpacked (re-packed), adjacent
  split packed records (merged), 5-byte negative int32 (re-written as 10
  bytes, as C++ does) and bool varints other than 0/1.
* ``parse_text(to_text(m)) == m`` for every decoded ``m`` whose map fields
  (``frontend_attributes.map``, ``schedule.sequences``) are key-sorted, as
  every jaxlib/XLA proto seen is; ``to_text`` sorts map entries by key (and
  prints a map entry's key and value even when absent), as C++ TextFormat
  does, so for other ``m`` the result differs only there. Text does not keep
  NaN payloads (all NaNs print as ``nan``, as in C++), nor the group wire
  type of an unknown field (it comes back length-delimited); a singular
  field present twice on the wire prints twice, which parse_text rejects,
  like C++. An unknown length-delimited field prints nested only when its
  bytes re-encode exactly, else as a string, so unknown fields survive text.
* ``to_text(parse_text(t))`` is stable: ``to_text(parse_text(to_text(m))) == to_text(m)``.
* ``encode(m, deterministic=True)`` orders fields by number, unknown fields
  last and map entries by key: the bytes of C++ ``SerializeToStringDeterministic``
  (what ``--xla_dump_hlo_as_proto`` writes).
"""

from __future__ import annotations

import bisect
import gzip
import math
import re
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from .errors import InputError, did_you_mean

__all__ = [
    "ENUMS",
    "SCHEMA",
    "EnumSchema",
    "FieldSchema",
    "Message",
    "MessageSchema",
    "Unknown",
    "decode",
    "encode",
    "looks_like_hlo_proto",
    "module_proto_from_any",
    "parse_text",
    "to_text",
]

# ---------------------------------------------------------------------------
# Schema table.
#
# One block per message: its name (nested messages as Outer.Inner, all in
# package xla), then one line per field: ``number name: type`` with ``[type]``
# for repeated fields. Types are protobuf scalar names or message/enum names of
# this table. Every file here is proto3, so repeated scalars and enums are
# packed. Field numbers, names and types follow xla/service/hlo.proto and
# xla/xla_data.proto of the XLA revision in jaxlib 0.10.2 (checked against the
# descriptors compiled into jaxlib's libjax_common.so by tests/test_hlo_proto.py).

_MESSAGE_TABLE = """
HloProto
    1 hlo_module: HloModuleProto
    3 buffer_assignment: BufferAssignmentProto

HloModuleProto
    1 name: string
    2 entry_computation_name: string
    6 entry_computation_id: int64
    3 computations: [HloComputationProto]
    4 host_program_shape: ProgramShapeProto
    5 id: int64
    23 pjrt_id: int64
    7 schedule: HloScheduleProto
    8 input_output_alias: HloInputOutputAliasProto
    22 payloads: [bytes]
    18 buffer_donor: HloBufferDonorProto
    10 cross_program_prefetches: [CrossProgramPrefetch]
    11 is_dynamic: bool
    12 spmd_output_sharding: OpSharding
    14 spmd_parameters_shardings: [OpSharding]
    16 use_auto_spmd_partitioning: bool
    13 profile_info: [HloModuleProto.ProfileInfo]
    15 device_assignment: DeviceAssignmentProto
    17 stack_frame_index: StackFrameIndexProto
    19 frontend_attributes: FrontendAttributes
    20 original_value_recovery_table: OriginalValueRecoveryTableProto
    21 device_type: string

BufferAssignmentProto
    1 logical_buffers: [LogicalBufferProto]
    2 buffer_aliases: [BufferAssignmentProto.BufferAlias]
    3 buffer_allocations: [BufferAllocationProto]
    4 heap_simulator_traces: [HeapSimulatorTrace]
    5 peak_buffers: [BufferAssignmentProto.PeakBuffers]

HloComputationProto
    1 name: string
    2 instructions: [HloInstructionProto]
    4 program_shape: ProgramShapeProto
    5 id: int64
    6 root_id: int64
    7 is_fusion_computation: bool
    8 execution_thread: string

ProgramShapeProto
    1 parameters: [ShapeProto]
    2 result: ShapeProto
    3 parameter_names: [string]

HloScheduleProto
    1 sequences: [HloScheduleProto.SequencesEntry]

HloInputOutputAliasProto
    1 entries: [HloInputOutputAliasProto.AliasEntryProto]

HloBufferDonorProto
    1 entries: [HloBufferDonorProto.BufferDonorEntryProto]

CrossProgramPrefetch
    1 parameter: int64
    2 index: [int64]
    3 offset: int64

OpSharding
    1 type: OpSharding.Type
    2 tile_shape: ShapeProto
    3 tile_assignment_dimensions: [int64]
    4 tile_assignment_devices: [int64]
    5 tuple_shardings: [OpSharding]
    6 replicate_on_last_tile_dim: bool
    7 metadata: [OpMetadata]
    8 last_tile_dims: [OpSharding.Type]
    9 iota_reshape_dims: [int64]
    10 iota_transpose_perm: [int32]
    11 is_shard_group: bool
    12 shard_group_id: int64
    13 shard_group_type: OpSharding.ShardGroupType
    14 named_sharding: NamedShardingProto

HloModuleProto.ProfileInfo
    1 profile_type: HloModuleProto.ProfileType
    2 relative_speedup: double
    3 profile_source: ProfileSource
    4 compilation_event: CompilationEvent
    5 fingerprint: string
    6 profile_generation_strategy: ProfileGenerationStrategy
    7 original_changelist: int64
    8 changelist: int64

DeviceAssignmentProto
    1 replica_count: int32
    2 computation_count: int32
    3 computation_devices: [DeviceAssignmentProto.ComputationDevice]

StackFrameIndexProto
    1 file_names: [string]
    2 function_names: [string]
    3 file_locations: [StackFrameIndexProto.FileLocation]
    4 stack_frames: [StackFrameIndexProto.StackFrame]

FrontendAttributes
    1 map: [FrontendAttributes.MapEntry]

OriginalValueRecoveryTableProto
    1 entries: [OriginalValueRecoveryTableProto.Entry]

LogicalBufferProto
    1 id: int64
    2 size: int64
    3 defined_at: LogicalBufferProto.Location
    4 color: int64

BufferAssignmentProto.BufferAlias
    1 source_buffer_id: int64
    2 location: LogicalBufferProto.Location

BufferAllocationProto
    1 index: int64
    2 size: int64
    3 is_thread_local: bool
    11 is_tuple: bool
    5 is_entry_computation_parameter: bool
    12 is_constant: bool
    6 parameter_number: int64
    10 parameter_shape_index: [int64]
    13 is_parameter_aliased_with_output: bool
    7 maybe_live_out: bool
    8 color: int64
    9 assigned: [BufferAllocationProto.Assigned]

HeapSimulatorTrace
    1 events: [HeapSimulatorTrace.Event]
    2 whole_module_simulation: bool
    3 buffer_allocation_index: int64

BufferAssignmentProto.PeakBuffers
    1 index: int64
    2 logical_buffer_ids: [int64]

HloInstructionProto
    1 name: string
    2 opcode: string
    3 shape: ShapeProto
    7 metadata: OpMetadata
    8 literal: LiteralProto
    9 parameter_number: int64
    11 fusion_kind: string
    13 tuple_index: int64
    14 dimensions: [int64]
    15 window: Window
    16 convolution_dimension_numbers: ConvolutionDimensionNumbers
    50 feature_group_count: int64
    58 batch_group_count: int64
    17 slice_dimensions: [HloInstructionProto.SliceDimensions]
    18 exponent_bits: int32
    19 mantissa_bits: int32
    20 dynamic_slice_sizes: [int64]
    21 padding_config: PaddingConfig
    22 outfeed_config: bytes
    23 distribution: RandomDistribution
    24 epsilon: float
    25 feature_index: int64
    26 channel_id: int64
    27 infeed_config: bytes
    28 custom_call_target: string
    29 outfeed_shape: ShapeProto
    30 dot_dimension_numbers: DotDimensionNumbers
    90 ragged_dot_dimension_numbers: RaggedDotDimensionNumbers
    31 fft_type: FftType
    32 fft_length: [int64]
    63 comparison_direction: string
    33 gather_dimension_numbers: GatherDimensionNumbers
    34 gather_slice_sizes: [int64]
    35 id: int64
    36 operand_ids: [int64]
    37 control_predecessor_ids: [int64]
    38 called_computation_ids: [int64]
    40 sharding: OpSharding
    43 backend_config: bytes
    99 backend_config_payload: Payload
    49 replica_groups: [ReplicaGroup]
    45 all_reduce_id: int64
    71 use_global_device_ids: bool
    47 is_host_transfer: bool
    60 is_stable: bool
    48 scatter_dimension_numbers: ScatterDimensionNumbers
    51 precision_config: PrecisionConfig
    52 source_target_pairs: [SourceTarget]
    54 domain_entry_sharding: OpSharding
    55 domain_exit_sharding: OpSharding
    56 constrain_layout: bool
    57 operand_shapes_with_layout: [ShapeProto]
    59 triangular_solve_options: TriangularSolveOptions
    62 cholesky_options: CholeskyOptions
    61 parameter_replication: ParameterReplication
    65 custom_call_has_side_effect: bool
    74 output_operand_aliasing: [OutputOperandAliasing]
    76 custom_call_schedule: CustomCallSchedule
    66 delta: int64
    67 indices_are_sorted: bool
    68 frontend_attributes: FrontendAttributes
    69 unique_indices: bool
    70 rng_algorithm: RandomAlgorithm
    72 comparison_type: string
    73 is_cross_program_prefetch: bool
    80 cross_program_prefetch_index: int32
    75 padding_type: PaddingType
    77 custom_call_api_version: CustomCallApiVersion
    79 async_execution_thread: string
    81 k: int64
    85 largest: bool
    82 statistics_viz: StatisticsViz
    87 collective_device_list: CollectiveDeviceListProto
    92 iota_collective_device_list: IotaReplicaGroupListProto
    93 mesh_axes_replica_group_list: MeshAxesReplicaGroupListProto
    88 original_value: OriginalValueProto
    89 is_composite: bool
    91 result_accuracy: ResultAccuracy
    94 is_reverse: bool
    95 num_carries: int64
    96 is_associative: TriState
    97 conv_kind: ConvolutionKind
    98 sparsity_config: SparsityConfig

ShapeProto
    2 element_type: PrimitiveType
    3 dimensions: [int64]
    6 is_dynamic_dimension: [bool]
    4 tuple_shapes: [ShapeProto]
    5 layout: LayoutProto

HloScheduleProto.SequencesEntry (map entry)
    1 key: int64
    2 value: HloScheduleProto.InstructionSequence

HloInputOutputAliasProto.AliasEntryProto
    1 output_shape_index: [int64]
    2 parameter_number: int64
    3 parameter_shape_index: [int64]
    4 kind: Kind

HloBufferDonorProto.BufferDonorEntryProto
    1 parameter_number: int64
    2 parameter_shape_index: [int64]

OpMetadata
    1 op_type: string
    2 op_name: string
    3 source_file: string
    4 source_line: int32
    17 source_end_line: int32
    18 source_column: int32
    19 source_end_column: int32
    5 profile_type: [ProfileType]
    8 size_of_generated_code_in_bytes: int64
    9 size_of_memory_working_set_in_bytes: int64
    10 profile_info: OpMetadata.ProfileInfo
    12 deduplicated_name: string
    15 stack_frame_id: int32
    16 scheduling_name: string
    20 metadata_payload: Payload

NamedShardingProto
    2 mesh: MeshProto
    3 dim_shardings: [NamedShardingProto.DimensionSharding]
    4 replicated_axes: [AxisRefProto]
    5 unreduced_axes: [AxisRefProto]
    7 manual_axes: [AxisRefProto]
    6 metadata: [OpMetadata]

DeviceAssignmentProto.ComputationDevice
    1 replica_device_ids: [int64]

StackFrameIndexProto.FileLocation
    1 file_name_id: int32
    2 function_name_id: int32
    3 line: int32
    5 end_line: int32
    4 column: int32
    6 end_column: int32

StackFrameIndexProto.StackFrame
    1 file_location_id: int32
    2 parent_frame_id: int32

FrontendAttributes.MapEntry (map entry)
    1 key: string
    2 value: string

OriginalValueRecoveryTableProto.Entry
    1 old_original_array: OriginalArrayProto
    2 new_original_array: OriginalArrayProto
    3 recovery_module: HloModuleProto

LogicalBufferProto.Location
    2 instruction_name: string
    4 instruction_id: int64
    3 shape_index: [int64]

BufferAllocationProto.Assigned
    1 logical_buffer_id: int64
    2 offset: int64
    3 size: int64
    4 element_type: PrimitiveType

HeapSimulatorTrace.Event
    1 kind: HeapSimulatorTrace.Event.Kind
    2 buffer_id: int64
    3 computation_name: string
    4 instruction_name: string
    5 share_with_canonical_id: int64

LiteralProto
    1 shape: ShapeProto
    2 preds: [bool]
    30 s1s: bytes
    26 s2s: bytes
    21 s4s: bytes
    15 s8s: bytes
    31 u1s: bytes
    27 u2s: bytes
    22 u4s: bytes
    3 u8s: bytes
    4 s32s: [int32]
    5 s64s: [int64]
    6 u32s: [uint32]
    7 u64s: [uint64]
    8 f32s: [float]
    9 f64s: [double]
    12 c64s: [float]
    18 c128s: [double]
    10 tuple_literals: [LiteralProto]
    11 f16s: bytes
    13 bf16s: bytes
    16 u16s: bytes
    17 s16s: bytes
    32 f4e2m1fns: bytes
    29 f8e3m4s: bytes
    23 f8e4m3b11fnuzs: bytes
    20 f8e4m3fns: bytes
    25 f8e4m3fnuzs: bytes
    28 f8e4m3s: bytes
    24 f8e5m2fnuzs: bytes
    19 f8e5m2s: bytes
    33 f8e8m0fnus: bytes
    35 f6e3m2fns: bytes
    36 f6e2m3fns: bytes
    14 sparse_indices: [int64]
    34 dynamic_sizes: [int32]

Window
    1 dimensions: [WindowDimension]

ConvolutionDimensionNumbers
    7 input_batch_dimension: int64
    8 input_feature_dimension: int64
    11 input_spatial_dimensions: [int64]
    3 kernel_input_feature_dimension: int64
    4 kernel_output_feature_dimension: int64
    6 kernel_spatial_dimensions: [int64]
    9 output_batch_dimension: int64
    10 output_feature_dimension: int64
    12 output_spatial_dimensions: [int64]

HloInstructionProto.SliceDimensions
    1 start: int64
    2 limit: int64
    3 stride: int64

PaddingConfig
    1 dimensions: [PaddingConfig.PaddingConfigDimension]

DotDimensionNumbers
    1 lhs_contracting_dimensions: [int64]
    2 rhs_contracting_dimensions: [int64]
    3 lhs_batch_dimensions: [int64]
    4 rhs_batch_dimensions: [int64]

RaggedDotDimensionNumbers
    1 dot_dimension_numbers: DotDimensionNumbers
    2 lhs_ragged_dimensions: [int64]
    3 rhs_group_dimensions: [int64]

GatherDimensionNumbers
    1 offset_dims: [int64]
    2 collapsed_slice_dims: [int64]
    3 start_index_map: [int64]
    4 index_vector_dim: int64
    5 operand_batching_dims: [int64]
    6 start_indices_batching_dims: [int64]

Payload
    1 value: bytes
    2 id: int64

ReplicaGroup
    1 replica_ids: [int64]

ScatterDimensionNumbers
    1 update_window_dims: [int64]
    2 inserted_window_dims: [int64]
    3 scatter_dims_to_operand_dims: [int64]
    4 index_vector_dim: int64
    5 input_batching_dims: [int64]
    6 scatter_indices_batching_dims: [int64]

PrecisionConfig
    1 operand_precision: [PrecisionConfig.Precision]
    2 algorithm: PrecisionConfig.Algorithm

SourceTarget
    1 source: int64
    2 target: int64

TriangularSolveOptions
    1 left_side: bool
    2 lower: bool
    3 unit_diagonal: bool
    4 transpose_a: TriangularSolveOptions.Transpose

CholeskyOptions
    1 lower: bool

ParameterReplication
    1 replicated_at_leaf_buffers: [bool]

OutputOperandAliasing
    1 output_shape_index: [int64]
    2 operand_index: int64
    3 operand_shape_index: [int64]

StatisticsViz
    1 stat_index_to_visualize: int64
    2 statistics: [Statistic]

CollectiveDeviceListProto
    1 replica_groups: [ReplicaGroup]

IotaReplicaGroupListProto
    1 num_replica_groups: int64
    2 num_devices_per_group: int64
    3 iota_reshape_dims: [int64]
    4 iota_transpose_perm: [int32]

MeshAxesReplicaGroupListProto
    1 mesh: MeshProto
    2 axes: [AxisRefProto]

OriginalValueProto
    1 elements: [OriginalValueElementProto]
    2 is_synthetic_call: bool

ResultAccuracy
    1 mode: ResultAccuracy.Mode
    2 tolerance: ResultAccuracy.Tolerance

SparsityConfig
    1 lhs: SparsityConfig.TensorSparsityConfig
    2 rhs: SparsityConfig.TensorSparsityConfig

LayoutProto
    1 minor_to_major: [int64]
    9 dim_level_types: [DimLevelType]
    13 dim_unique: [bool]
    14 dim_ordered: [bool]
    6 tiles: [TileProto]
    16 tail_padding_alignment_in_elements: int64
    7 element_size_in_bits: int64
    8 memory_space: int64
    11 index_primitive_type: PrimitiveType
    12 pointer_primitive_type: PrimitiveType
    10 physical_shape: ShapeProto
    15 dynamic_shape_metadata_prefix_bytes: int64
    17 split_configs: [SplitConfigProto]

HloScheduleProto.InstructionSequence
    1 instruction_ids: [int64]

OpMetadata.ProfileInfo
    1 profile_type: [ProfileType]
    2 relative_speedup: double
    3 profile_source: ProfileSource
    4 compilation_event: CompilationEvent
    5 profile_generation_strategy: ProfileGenerationStrategy

MeshProto
    1 axes: [MeshProto.MeshAxis]
    2 device_ids: [int64]
    3 iota_transform: MeshProto.IotaTransform

NamedShardingProto.DimensionSharding
    1 axes: [AxisRefProto]
    2 is_closed: bool

AxisRefProto
    1 mesh_axis_index: int64
    2 sub_axis_info: AxisRefProto.SubAxis

OriginalArrayProto
    1 instruction_name: string
    2 shape_index: [int64]

WindowDimension
    1 size: int64
    2 stride: int64
    3 padding_low: int64
    4 padding_high: int64
    5 window_dilation: int64
    6 base_dilation: int64
    7 window_reversal: bool

PaddingConfig.PaddingConfigDimension
    1 edge_padding_low: int64
    2 edge_padding_high: int64
    3 interior_padding: int64

Statistic
    1 stat_name: string
    2 stat_val: double

OriginalValueElementProto
    1 shape_index: [int64]
    2 original_array: OriginalArrayProto

ResultAccuracy.Tolerance
    1 atol: double
    2 rtol: double
    3 ulps: int64

SparsityConfig.TensorSparsityConfig
    1 num_non_zero: int64
    2 block_size: int64
    3 dimension: int64
    4 stride: int64

TileProto
    1 dimensions: [int64]

SplitConfigProto
    1 dimension: int64
    2 split_indices: [int64]

MeshProto.MeshAxis
    1 name: string
    2 size: int64

MeshProto.IotaTransform
    1 reshape_dims: [int64]
    2 transpose_perm: [int64]

AxisRefProto.SubAxis
    1 pre_size: int64
    2 size: int64
"""

# ``Enum: NAME=number ...``; continuation lines are indented.
_ENUM_TABLE = """
OpSharding.Type: REPLICATED=0 MAXIMAL=1 TUPLE=2 OTHER=3 MANUAL=4 UNKNOWN=5 UNREDUCED=6
OpSharding.ShardGroupType: AS=0 LIKE=1
HloModuleProto.ProfileType: INVALID=0 FLAG=1 FUSION=2 LAYOUT=3 DOT=4 FLAGNET=5
    SHARDING=6 SCHEDULE=7
ProfileSource: PROFILE_SOURCE_UNKNOWN_SOURCE=0 PROFILE_SOURCE_EMBEDDED=1
    PROFILE_SOURCE_REMOTE=2
CompilationEvent: COMPILATION_EVENT_UNKNOWN_EVENT=0
    COMPILATION_EVENT_FIRST_COMPILATION=1 COMPILATION_EVENT_RECOMPILATION=2
ProfileGenerationStrategy: PROFILE_GENERATION_STRATEGY_UNKNOWN=0
    PROFILE_GENERATION_STRATEGY_GA=1 PROFILE_GENERATION_STRATEGY_FANTA=2
    PROFILE_GENERATION_STRATEGY_CFO=3 PROFILE_GENERATION_STRATEGY_EXHAUSTIVE=4
    PROFILE_GENERATION_STRATEGY_LCM_GNN=5 PROFILE_GENERATION_STRATEGY_LCM_MOE=6
RandomDistribution: RNG_INVALID=0 RNG_UNIFORM=1 RNG_NORMAL=2
FftType: FFT=0 IFFT=1 RFFT=2 IRFFT=3
CustomCallSchedule: SCHEDULE_NONE=0 SCHEDULE_LATEST=1 SCHEDULE_EARLIEST=2
RandomAlgorithm: RNG_DEFAULT=0 RNG_THREE_FRY=1 RNG_PHILOX=2
PaddingType: PADDING_INVALID=0 PADDING_VALID=1 PADDING_SAME=2
CustomCallApiVersion: API_VERSION_UNSPECIFIED=0 API_VERSION_ORIGINAL=1
    API_VERSION_STATUS_RETURNING=2 API_VERSION_STATUS_RETURNING_UNIFIED=3
    API_VERSION_TYPED_FFI=4
TriState: TRI_STATE_UNSPECIFIED=0 TRI_STATE_TRUE=1 TRI_STATE_FALSE=2
ConvolutionKind: CONVOLUTION_KIND_UNSET=0 CONVOLUTION_KIND_FPROP=1
    CONVOLUTION_KIND_DGRAD=2 CONVOLUTION_KIND_WGRAD=3
PrimitiveType: PRIMITIVE_TYPE_INVALID=0 PRED=1 S1=30 S2=26 S4=21 S8=2 S16=3 S32=4 S64=5
    U1=31 U2=27 U4=22 U8=6 U16=7 U32=8 U64=9 F16=10 F32=11 BF16=16 F64=12 F8E5M2=19
    F8E4M3=28 F8E4M3FN=20 F8E4M3B11FNUZ=23 F8E3M4=29 F8E5M2FNUZ=24 F8E4M3FNUZ=25
    F4E2M1FN=32 F8E8M0FNU=33 F6E3M2FN=35 F6E2M3FN=36 C64=15 C128=18 TUPLE=13
    OPAQUE_TYPE=14 TOKEN=17 BUFFER=34
Kind: UNDEFINED_ALIAS=0 MAY_ALIAS=1 MUST_ALIAS=2
ProfileType: INVALID=0 WINDOW=1 FLAG=2 INTEGER=3
HeapSimulatorTrace.Event.Kind: ALLOC=0 FREE=1 SHARE_WITH=2
PrecisionConfig.Precision: DEFAULT=0 HIGH=1 HIGHEST=2
PrecisionConfig.Algorithm: ALG_UNSET=0 ALG_DOT_ANY_F8_ANY_F8_F32=1
    ALG_DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM=2 ALG_DOT_F16_F16_F16=3 ALG_DOT_F16_F16_F32=4
    ALG_DOT_BF16_BF16_BF16=5 ALG_DOT_BF16_BF16_F32=6 ALG_DOT_BF16_BF16_F32_X3=7
    ALG_DOT_BF16_BF16_F32_X6=8 ALG_DOT_TF32_TF32_F32=9 ALG_DOT_TF32_TF32_F32_X3=10
    ALG_DOT_F32_F32_F32=11 ALG_DOT_F64_F64_F64=12 ALG_DOT_BF16_BF16_F32_X9=13
TriangularSolveOptions.Transpose: TRANSPOSE_INVALID=0 NO_TRANSPOSE=1 TRANSPOSE=2
    ADJOINT=3
ResultAccuracy.Mode: DEFAULT=0 HIGHEST=1
DimLevelType: DIM_DENSE=0 DIM_COMPRESSED=1 DIM_SINGLETON=2 DIM_LOOSE_COMPRESSED=3
"""

# Scalar type -> wire type of one value.
_SCALAR_WIRE = {
    "double": 1, "float": 5, "int64": 0, "uint64": 0, "int32": 0, "uint32": 0,
    "sint32": 0, "sint64": 0, "fixed32": 5, "fixed64": 1, "sfixed32": 5,
    "sfixed64": 1, "bool": 0, "string": 2, "bytes": 2, "enum": 0,
}

_VARINT, _FIXED64, _LEN, _SGROUP, _EGROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
_MASK64 = (1 << 64) - 1
_MAX_DEPTH = 100  # C++ protobuf's default recursion limit


class EnumSchema:
    """An enum: name <-> number (names are package-relative: ``OpSharding.Type``)."""

    __slots__ = ("name", "by_name", "by_number")

    def __init__(self, name: str, values: Sequence[tuple[str, int]]) -> None:
        self.name = name
        self.by_name = dict(values)
        self.by_number: dict[int, str] = {}
        for n, v in values:
            self.by_number.setdefault(v, n)

    def __repr__(self) -> str:
        return f"EnumSchema({self.name!r}, {len(self.by_name)} values)"


class FieldSchema:
    """One field: number, name, type and shape."""

    __slots__ = ("number", "name", "type", "repeated", "kind", "wire_type", "packed",
                 "message", "enum")

    def __init__(self, number: int, name: str, type_: str, repeated: bool) -> None:
        self.number = number
        self.name = name
        self.type = type_          # scalar name, or message/enum name
        self.repeated = repeated
        self.kind = "scalar"       # "scalar" | "enum" | "message"
        self.wire_type = _SCALAR_WIRE.get(type_, _LEN)
        self.packed = False
        self.message: MessageSchema | None = None
        self.enum: EnumSchema | None = None

    def accepts(self, wire_type: int) -> bool:
        return wire_type == self.wire_type or (self.packed and wire_type == _LEN)

    def __repr__(self) -> str:
        t = f"[{self.type}]" if self.repeated else self.type
        return f"FieldSchema({self.number} {self.name}: {t})"


class MessageSchema:
    """One message type: its fields by number and by name."""

    __slots__ = ("name", "fields", "by_number", "by_name", "map_entry", "map_fields")

    def __init__(self, name: str, map_entry: bool) -> None:
        self.name = name
        self.map_entry = map_entry
        self.fields: list[FieldSchema] = []
        self.by_number: dict[int, FieldSchema] = {}
        self.by_name: dict[str, FieldSchema] = {}
        self.map_fields: frozenset[str] = frozenset()

    @property
    def full_name(self) -> str:
        return "xla." + self.name

    def __repr__(self) -> str:
        return f"MessageSchema({self.name!r}, {len(self.fields)} fields)"


def _build_schema() -> tuple[dict[str, MessageSchema], dict[str, EnumSchema]]:
    enums: dict[str, EnumSchema] = {}
    name = None
    values: list[tuple[str, int]] = []
    for line in _ENUM_TABLE.splitlines() + [""]:
        if line and not line[0].isspace():
            if name:
                enums[name] = EnumSchema(name, values)
            name, _, line = line.partition(":")
            values = []
        if name and line.strip():
            for item in line.split():
                n, _, v = item.partition("=")
                values.append((n, int(v)))
    if name:
        enums[name] = EnumSchema(name, values)

    messages: dict[str, MessageSchema] = {}
    current = None
    for line in _MESSAGE_TABLE.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            head = line.split()
            current = MessageSchema(head[0], map_entry="(map" in line)
            messages[current.name] = current
            continue
        num, rest = line.split(None, 1)
        fname, _, ftype = rest.partition(":")
        ftype = ftype.strip()
        repeated = ftype.startswith("[")
        field = FieldSchema(int(num), fname.strip(), ftype.strip("[]"), repeated)
        current.fields.append(field)
        current.by_number[field.number] = field
        current.by_name[field.name] = field

    for msg in messages.values():
        for f in msg.fields:
            if f.type in messages:
                f.kind, f.message, f.wire_type = "message", messages[f.type], _LEN
            elif f.type in enums:
                f.kind, f.enum, f.wire_type = "enum", enums[f.type], _VARINT
            elif f.type not in _SCALAR_WIRE:
                raise AssertionError(f"schema: unknown type {f.type} in {msg.name}")
            f.packed = f.repeated and f.wire_type != _LEN
        msg.map_fields = frozenset(f.name for f in msg.fields
                                   if f.kind == "message" and f.message.map_entry)
    return messages, enums


SCHEMA, ENUMS = _build_schema()


def _schema(message: str | MessageSchema) -> MessageSchema:
    if isinstance(message, MessageSchema):
        return message
    name = message[4:] if message.startswith("xla.") else message
    try:
        return SCHEMA[name]
    except KeyError:
        raise ValueError(f"unknown message type {message!r}"
                         + (f" ({h})" if (h := did_you_mean(name, SCHEMA)) else "")) from None


# ---------------------------------------------------------------------------
# The tree.

class Unknown:
    """A field the schema does not know, kept as read.

    ``data`` is an ``int`` for varint / fixed32 / fixed64 fields and the raw
    payload ``bytes`` for length-delimited fields and groups.
    """

    __slots__ = ("wire_type", "data")

    def __init__(self, wire_type: int, data: int | bytes) -> None:
        self.wire_type = wire_type
        self.data = data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Unknown):
            return NotImplemented
        return self.wire_type == other.wire_type and self.data == other.data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Unknown({self.wire_type}, {self.data!r})"


class _NaN(float):
    """A NaN read from the wire, remembering its exact bits for re-encoding."""

    __slots__ = ("raw",)

    def __new__(cls, value: float, raw: bytes) -> _NaN:
        obj = super().__new__(cls, value)
        obj.raw = raw
        return obj


def _values_equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if a != a or b != b:
            return a != a and b != b
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


class Message(list):
    """One protobuf message: a list of ``(field_name, value)`` pairs, in order.

    ``type`` names the message (``"HloModuleProto"``). Unknown fields appear as
    ``(field_number, Unknown)``. Repeated fields have one pair per element.
    """

    __slots__ = ("type",)

    def __init__(self, type: str, items: Iterable[tuple[str | int, Any]] = ()) -> None:
        super().__init__(items)
        self.type = type

    def get(self, name: str, default: Any = None) -> Any:
        """The field's value (the last one, as protobuf merges), or ``default``."""
        for n, v in reversed(self):
            if n == name:
                return v
        return default

    def get_all(self, name: str) -> list[Any]:
        """Every value of a (repeated) field, in order."""
        return [v for n, v in self if n == name]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        if self.type != other.type or len(self) != len(other):
            return False
        return all(n1 == n2 and _values_equal(v1, v2)
                   for (n1, v1), (n2, v2) in zip(self, other))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Message({self.type!r}, {list.__repr__(self)})"


# ---------------------------------------------------------------------------
# Wire format: decoding.

class _WireError(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise _WireError("truncated varint", pos)
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    start = pos
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= end:
            raise _WireError("truncated varint", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise _WireError("varint longer than 10 bytes", start)


def _read_field(buf: bytes, pos: int, end: int, depth: int) -> tuple[int, int, Any, int]:
    """One field at ``pos``: (number, wire type, value, next pos).

    The value is an int for varints, the 8/4 raw bytes for fixed64/fixed32 and
    a (start, stop) span for length-delimited fields and groups.
    """
    tag_pos = pos
    tag, pos = _read_varint(buf, pos, end)
    number, wt = tag >> 3, tag & 7
    if number == 0 or number >= 1 << 29:
        raise _WireError(f"invalid field number {number}", tag_pos)
    if wt == _VARINT:
        value, pos = _read_varint(buf, pos, end)
    elif wt == _LEN:
        n, pos = _read_varint(buf, pos, end)
        if n > end - pos:
            raise _WireError(f"field {number}: length {n} runs past the end", tag_pos)
        value = (pos, pos + n)
        pos += n
    elif wt == _FIXED64 or wt == _FIXED32:
        n = 8 if wt == _FIXED64 else 4
        if pos + n > end:
            raise _WireError(f"field {number}: truncated fixed{n * 8}", tag_pos)
        value = buf[pos:pos + n]
        pos += n
    elif wt == _SGROUP:
        if depth >= _MAX_DEPTH:
            raise _WireError("nesting deeper than 100", tag_pos)
        start = pos
        while True:
            if pos >= end:
                raise _WireError(f"group {number} is not closed", tag_pos)
            inner_pos = pos
            t, _ = _read_varint(buf, pos, end)
            if t & 7 == _EGROUP:
                if t >> 3 != number:
                    raise _WireError("mismatched end-group tag", inner_pos)
                value = (start, inner_pos)
                pos = _read_varint(buf, pos, end)[1]
                break
            pos = _read_field(buf, pos, end, depth + 1)[3]
    elif wt == _EGROUP:
        raise _WireError("unexpected end-group tag", tag_pos)
    else:
        raise _WireError(f"invalid wire type {wt}", tag_pos)
    return number, wt, value, pos


def _unknown(buf: bytes, wt: int, value: Any) -> Unknown:
    if wt == _VARINT:
        return Unknown(wt, value)
    if wt == _FIXED64:
        return Unknown(wt, struct.unpack("<Q", value)[0])
    if wt == _FIXED32:
        return Unknown(wt, struct.unpack("<I", value)[0])
    return Unknown(wt, bytes(buf[value[0]:value[1]]))


def _int32(v: int) -> int:
    return ((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


def _int64(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v


def _unzigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


_VARINT_VALUE = {
    "int64": _int64,
    "uint64": lambda v: v,
    "int32": _int32,
    "uint32": lambda v: v & 0xFFFFFFFF,
    "sint64": lambda v: _unzigzag(v),
    "sint32": lambda v: _int32(_unzigzag(v & 0xFFFFFFFF)),
    "bool": lambda v: v != 0,
}
_FIXED_FORMAT = {"double": "d", "float": "f", "fixed64": "Q", "fixed32": "I",
                 "sfixed64": "q", "sfixed32": "i"}


def _fixed_value(ftype: str, raw: bytes) -> Any:
    v = struct.unpack("<" + _FIXED_FORMAT[ftype], raw)[0]
    if v != v:
        return _NaN(v, bytes(raw))
    return v


def _enum_value(f: FieldSchema, v: int) -> str | int:
    v = _int32(v)
    return f.enum.by_number.get(v, v)


def _decode_message(buf: bytes, pos: int, end: int, schema: MessageSchema,
                    depth: int) -> Message:
    if depth > _MAX_DEPTH:
        raise _WireError("nesting deeper than 100", pos)
    msg = Message(schema.name)
    append = msg.append
    by_number = schema.by_number
    while pos < end:
        number, wt, value, pos = _read_field(buf, pos, end, depth)
        f = by_number.get(number)
        if f is None or not f.accepts(wt):
            append((number, _unknown(buf, wt, value)))
            continue
        name = f.name
        if wt == _LEN:
            a, b = value
            if f.kind == "message":
                append((name, _decode_message(buf, a, b, f.message, depth + 1)))
            elif f.type == "string":
                raw = bytes(buf[a:b])
                try:
                    append((name, raw.decode("utf-8")))
                except UnicodeDecodeError:
                    append((name, raw))
            elif f.type == "bytes":
                append((name, bytes(buf[a:b])))
            else:  # packed run
                for v in _decode_packed(buf, a, b, f):
                    append((name, v))
        elif wt == _VARINT:
            if f.kind == "enum":
                append((name, _enum_value(f, value)))
            else:
                append((name, _VARINT_VALUE[f.type](value)))
        else:
            append((name, _fixed_value(f.type, value)))
    return msg


def _decode_packed(buf: bytes, a: int, b: int, f: FieldSchema) -> list[Any]:
    if f.wire_type == _VARINT:
        out = []
        conv = _VARINT_VALUE.get(f.type)
        while a < b:
            v, a = _read_varint(buf, a, b)
            out.append(_enum_value(f, v) if conv is None else conv(v))
        return out
    size = 8 if f.wire_type == _FIXED64 else 4
    if (b - a) % size:
        raise _WireError(f"packed field {f.number}: length {b - a} is not a multiple of {size}", a)
    fmt = _FIXED_FORMAT[f.type]
    values = list(struct.unpack_from(f"<{(b - a) // size}{fmt}", buf, a))
    if fmt in "df":
        for i, v in enumerate(values):
            if v != v:
                values[i] = _NaN(v, bytes(buf[a + i * size:a + (i + 1) * size]))
    return values


def decode(data: bytes, message: str = "HloModuleProto") -> Message:
    """Binary wire format -> :class:`Message` of type ``message``.

    Raises InputError for bytes that are not a well-formed protobuf message.
    """
    schema = _schema(message)
    buf = bytes(data)
    try:
        return _decode_message(buf, 0, len(buf), schema, 0)
    except _WireError as e:
        raise InputError(f"malformed {schema.name}: {e.message} (at byte {e.pos})") from None


# ---------------------------------------------------------------------------
# Wire format: encoding.

def _put_varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _check_int(f: FieldSchema, v: Any, lo: int, hi: int) -> int:
    if not isinstance(v, int):
        raise TypeError(f"field {f.name!r} ({f.type}) needs an int, got {type(v).__name__}")
    if not lo <= v < hi:
        raise ValueError(f"field {f.name!r}: {v} is out of range for {f.type}")
    return v


def _put_scalar(out: bytearray, f: FieldSchema, v: Any) -> None:
    """One value of a non-message field, without its tag."""
    t = f.type
    if f.kind == "enum":
        if isinstance(v, str):
            try:
                v = f.enum.by_name[v]
            except KeyError:
                raise ValueError(f"field {f.name!r}: {v!r} is not a value of {f.enum.name}") from None
        _put_varint(out, _check_int(f, v, -(1 << 31), 1 << 31) & _MASK64)
    elif t == "int64" or t == "int32":
        bits = 63 if t == "int64" else 31
        _put_varint(out, _check_int(f, v, -(1 << bits), 1 << bits) & _MASK64)
    elif t == "uint64" or t == "uint32":
        _put_varint(out, _check_int(f, v, 0, 1 << (64 if t == "uint64" else 32)))
    elif t == "bool":
        out.append(1 if v else 0)
    elif t == "sint64" or t == "sint32":
        bits = 64 if t == "sint64" else 32
        v = _check_int(f, v, -(1 << (bits - 1)), 1 << (bits - 1))
        _put_varint(out, ((v << 1) ^ (v >> (bits - 1))) & ((1 << bits) - 1))
    elif t == "string" or t == "bytes":
        raw = v.encode("utf-8") if isinstance(v, str) else bytes(v)
        _put_varint(out, len(raw))
        out += raw
    else:  # fixed-width
        if isinstance(v, _NaN) and len(v.raw) == (8 if f.wire_type == _FIXED64 else 4):
            out += v.raw
        elif t == "float":
            out += struct.pack("<f", _to_float32(v))
        else:
            out += struct.pack("<" + _FIXED_FORMAT[t], v)


def _put_unknown(out: bytearray, number: int, u: Unknown) -> None:
    _put_varint(out, number << 3 | u.wire_type)
    wt, data = u.wire_type, u.data
    if wt == _VARINT:
        _put_varint(out, data & _MASK64)
    elif wt == _FIXED64:
        out += struct.pack("<Q", data & _MASK64)
    elif wt == _FIXED32:
        out += struct.pack("<I", data & 0xFFFFFFFF)
    elif wt == _LEN:
        _put_varint(out, len(data))
        out += data
    elif wt == _SGROUP:
        out += data
        _put_varint(out, number << 3 | _EGROUP)
    else:
        raise ValueError(f"field {number}: invalid wire type {wt}")


def _sorted_map_entries(entries: list[Any], f: FieldSchema) -> list[Any]:
    key_field = f.message.by_name["key"]
    default: Any = b"" if key_field.type == "string" else 0
    def key(e: Any) -> Any:
        for n, v in e:
            if n == "key":
                return v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v
        return default
    return sorted(entries, key=key)


def _deterministic_items(msg: Sequence[tuple[Any, Any]], schema: MessageSchema) -> list:
    known = [(n, v) for n, v in msg if not isinstance(n, int)]
    unknown = [(n, v) for n, v in msg if isinstance(n, int)]
    known.sort(key=lambda item: schema.by_name[item[0]].number if item[0] in schema.by_name else -1)
    if schema.map_fields:
        for name in schema.map_fields:
            idx = [i for i, (n, _) in enumerate(known) if n == name]
            if len(idx) > 1:
                entries = _sorted_map_entries([known[i][1] for i in idx], schema.by_name[name])
                for i, e in zip(idx, entries):
                    known[i] = (name, e)
    return known + unknown


def _encode_message(msg: Sequence[tuple[Any, Any]], schema: MessageSchema, out: bytearray,
                    deterministic: bool, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("message nesting deeper than 100")
    items = _deterministic_items(msg, schema) if deterministic else msg
    by_name = schema.by_name
    i, n = 0, len(items)
    while i < n:
        name, value = items[i]
        if isinstance(name, int):
            if not isinstance(value, Unknown):
                raise TypeError(f"numbered field {name} needs an Unknown value")
            _put_unknown(out, name, value)
            i += 1
            continue
        f = by_name.get(name)
        if f is None:
            raise ValueError(f"message type {schema.full_name!r} has no field named {name!r}")
        if f.packed:
            j = i + 1
            while j < n and items[j][0] == name:
                j += 1
            payload = bytearray()
            for k in range(i, j):
                _put_scalar(payload, f, items[k][1])
            _put_varint(out, f.number << 3 | _LEN)
            _put_varint(out, len(payload))
            out += payload
            i = j
            continue
        _put_varint(out, f.number << 3 | f.wire_type)
        if f.kind == "message":
            if isinstance(value, Message) and value.type != f.message.name:
                raise TypeError(f"field {name!r} needs a {f.message.name}, got a {value.type}")
            sub = bytearray()
            _encode_message(value, f.message, sub, deterministic, depth + 1)
            _put_varint(out, len(sub))
            out += sub
        else:
            _put_scalar(out, f, value)
        i += 1


def encode(msg: Message, *, deterministic: bool = False, message: str | None = None) -> bytes:
    """:class:`Message` -> binary wire format.

    Fields are written in the message's order (consecutive elements of a
    packed repeated field as one record). ``deterministic=True`` writes what
    C++ ``SerializeToStringDeterministic`` would: fields by number, unknown
    fields last, map entries by key. ``message`` overrides ``msg.type``.
    """
    schema = _schema(message or msg.type)
    out = bytearray()
    _encode_message(msg, schema, out, deterministic, 0)
    return bytes(out)


# ---------------------------------------------------------------------------
# Text format: printing (C++ TextFormat::PrintToString).

_CESCAPE = []
for _c in range(256):
    if _c == 0x0A:
        _CESCAPE.append("\\n")
    elif _c == 0x0D:
        _CESCAPE.append("\\r")
    elif _c == 0x09:
        _CESCAPE.append("\\t")
    elif _c in (0x22, 0x27, 0x5C):
        _CESCAPE.append("\\" + chr(_c))
    elif 0x20 <= _c < 0x7F:
        _CESCAPE.append(chr(_c))
    else:
        _CESCAPE.append("\\%03o" % _c)
del _c
_PLAIN_BYTES = re.compile(rb"[\x20-\x7e]*\Z")


def _cescape(raw: bytes) -> str:
    """absl::CEscape: C escapes, octal for every other non-printable byte."""
    if _PLAIN_BYTES.match(raw) and not any(c in raw for c in b"\"'\\"):
        return raw.decode("ascii")
    return "".join([_CESCAPE[c] for c in raw])


_FLT_MAX = 3.4028234663852886e38
_FLT_MIN_NORMAL = 1.1754943508222875e-38


def _to_float32(v: float) -> float:
    """C++ io::SafeDoubleToFloat: round to float32; just past FLT_MAX clamps to it."""
    v = float(v)
    if v != v or v in (math.inf, -math.inf):
        return v
    if abs(v) > _FLT_MAX:
        return math.copysign(_FLT_MAX if abs(v) <= 3.4028235677973366e38 else math.inf, v)
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _format_double(v: float) -> str:
    """protobuf io::SimpleDtoa: %.15g if it reads back exactly, else %.17g."""
    if v != v:
        return "nan"
    if v in (math.inf, -math.inf):
        return "inf" if v > 0 else "-inf"
    s = "%.15g" % v
    if float(s) != v:
        s = "%.17g" % v
    return s


def _format_float(v: float) -> str:
    """protobuf io::SimpleFtoa: %.6g if strtof reads it back exactly, else %.9g."""
    if v != v:
        return "nan"
    if v in (math.inf, -math.inf):
        return "inf" if v > 0 else "-inf"
    s = "%.6g" % v
    # strtof sets ERANGE for subnormal results, which SimpleFtoa treats as a miss.
    if (v != 0 and abs(v) < _FLT_MIN_NORMAL) or _to_float32(float(s)) != v:
        s = "%.9g" % v
    return s


def _format_scalar(f: FieldSchema, v: Any) -> str:
    t = f.type
    if f.kind == "enum":
        return v if isinstance(v, str) else str(v)
    if t == "string" or t == "bytes":
        raw = v.encode("utf-8", "surrogatepass") if isinstance(v, str) else bytes(v)
        return '"' + _cescape(raw) + '"'
    if t == "bool":
        return "true" if v else "false"
    if t == "float":
        return _format_float(v)
    if t == "double":
        return _format_double(v)
    return str(int(v))


def _unknown_set(data: bytes, exact: bool = True) -> list[tuple[int, Unknown]] | None:
    """``data`` as a nested set of unknown fields, if it parses (and, if ``exact``,
    re-encodes to the same bytes: only then does printing it nested lose nothing)."""
    if not data:
        return None
    out: list[tuple[int, Unknown]] = []
    pos, end = 0, len(data)
    try:
        while pos < end:
            number, wt, value, pos = _read_field(data, pos, end, 1)
            out.append((number, _unknown(data, wt, value)))
    except _WireError:
        return None
    if exact:
        check = bytearray()
        for number, u in out:
            _put_unknown(check, number, u)
        if bytes(check) != data:
            return None
    return out


def _print_unknown(number: int, u: Unknown, pad: str, out: list[str], depth: int) -> None:
    wt = u.wire_type
    if wt == _VARINT:
        out.append(f"{pad}{number}: {u.data & _MASK64}\n")
    elif wt == _FIXED32:
        out.append(f"{pad}{number}: 0x{u.data & 0xFFFFFFFF:08x}\n")
    elif wt == _FIXED64:
        out.append(f"{pad}{number}: 0x{u.data & _MASK64:016x}\n")
    else:
        nested = _unknown_set(u.data) if depth < _MAX_DEPTH else None
        if nested is None and wt == _SGROUP:
            nested = _unknown_set(u.data, exact=False)
        if nested is None:
            out.append(f'{pad}{number}: "{_cescape(u.data)}"\n')
        else:
            out.append(f"{pad}{number} {{\n")
            for n2, u2 in nested:
                _print_unknown(n2, u2, pad + "  ", out, depth + 1)
            out.append(f"{pad}}}\n")


def _print_message(msg: Sequence[tuple[Any, Any]], schema: MessageSchema, pad: str,
                   out: list[str], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("message nesting deeper than 100")
    items: Sequence[tuple[Any, Any]] = msg
    if schema.map_entry:
        items = _map_entry_items(msg, schema)
    elif schema.map_fields and any(n in schema.map_fields for n, _ in msg):
        items = _sort_maps(msg, schema)
    by_name = schema.by_name
    for name, value in items:
        if isinstance(name, int):
            _print_unknown(name, value, pad, out, depth)
            continue
        f = by_name.get(name)
        if f is None:
            raise ValueError(f"message type {schema.full_name!r} has no field named {name!r}")
        if f.kind == "message":
            out.append(f"{pad}{name} {{\n")
            _print_message(value, f.message, pad + "  ", out, depth + 1)
            out.append(f"{pad}}}\n")
        else:
            out.append(f"{pad}{name}: {_format_scalar(f, value)}\n")


def _default(f: FieldSchema) -> Any:
    if f.kind == "message":
        return Message(f.message.name)
    if f.kind == "enum":
        return f.enum.by_number.get(0, 0)
    return {"string": "", "bytes": b"", "bool": False, "float": 0.0, "double": 0.0}.get(f.type, 0)


def _map_entry_items(msg: Sequence[tuple[Any, Any]], schema: MessageSchema) -> list:
    # C++ prints a map entry's key and value always, defaults included.
    items = []
    for fname in ("key", "value"):
        f = schema.by_name[fname]
        vals = [v for n, v in msg if n == fname]
        items.append((fname, vals[-1] if vals else _default(f)))
    return items + [(n, v) for n, v in msg if n not in ("key", "value")]


def _sort_maps(msg: Sequence[tuple[Any, Any]], schema: MessageSchema) -> list:
    items = list(msg)
    for name in schema.map_fields:
        idx = [i for i, (n, _) in enumerate(items) if n == name]
        if len(idx) > 1:
            entries = _sorted_map_entries([items[i][1] for i in idx], schema.by_name[name])
            for i, e in zip(idx, entries):
                items[i] = (name, e)
    return items


def to_text(msg: Message, message: str | None = None) -> str:
    """:class:`Message` -> protobuf text format, as C++ ``TextFormat::PrintToString``.

    Fields print in the message's order (field-number order for anything XLA
    wrote), map entries sorted by key, unknown fields as numbered fields.
    """
    schema = _schema(message or msg.type)
    out: list[str] = []
    _print_message(msg, schema, "", out, 0)
    return "".join(out)


# ---------------------------------------------------------------------------
# Text format: parsing.

# One token per match, after any whitespace and comments (possessive: never
# re-entered); "end" matches once at the end of the text, "bad" catches the rest.
_TOKEN = re.compile(r"""
    (?:[ \t\r\n\f\v]+|\#[^\n]*)*+
    (?:
      (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>(?:0[xX][0-9A-Fa-f]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fF]?)
    | (?P<string>"(?:[^"\\\n]|\\[^\n])*"|'(?:[^'\\\n]|\\[^\n])*')
    | (?P<symbol>[{}<>:\[\],;\-/])
    | (?P<end>\Z)
    | (?P<bad>[\s\S])
    )
""", re.VERBOSE)
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))",
                     re.DOTALL)
_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
                   "\\": 92, "'": 39, '"': 34, "?": 63}
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_HEX = re.compile(r"0[xX][0-9A-Fa-f]+\Z")
_OCTAL = re.compile(r"0[0-7]+\Z")
_INT_RANGE = {
    "int32": (-(1 << 31), 1 << 31), "sint32": (-(1 << 31), 1 << 31), "sfixed32": (-(1 << 31), 1 << 31),
    "int64": (-(1 << 63), 1 << 63), "sint64": (-(1 << 63), 1 << 63), "sfixed64": (-(1 << 63), 1 << 63),
    "uint32": (0, 1 << 32), "fixed32": (0, 1 << 32),
    "uint64": (0, 1 << 64), "fixed64": (0, 1 << 64),
}


# Tokens are (kind, text, pos) tuples; kind is "ident", "number", "string",
# "eof" or the symbol itself.
_Tok = tuple
_TOKEN_KINDS = (None, "ident", "number", "string", "symbol", "end", "bad")


def _describe(tok: _Tok) -> str:
    return "end of input" if tok[0] == "eof" else f'"{tok[1]}"'


class _TextParser:
    def __init__(self, text: str, file: str | None) -> None:
        self.text = text
        self.file = file
        self._line_starts: list[int] | None = None
        self.toks = self._tokenize()
        self.i = 0

    # -- errors and positions
    def where(self, pos: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_right(self._line_starts, pos)
        return line, pos - self._line_starts[line - 1] + 1

    def error(self, message: str, tok: _Tok | int, hint: str | None = None) -> InputError:
        line, col = self.where(tok if isinstance(tok, int) else tok[2])
        return InputError(message, file=self.file, line=line, col=col, hint=hint)

    def _tokenize(self) -> list[_Tok]:
        text, n = self.text, len(self.text)
        toks: list[_Tok] = []
        append = toks.append
        kinds = _TOKEN_KINDS
        for m in _TOKEN.finditer(text):
            i = m.lastindex
            value = m.group(i)
            if i == 4:  # symbol
                append((value, value, m.start(i)))
            elif i <= 3:
                if i == 2:  # number
                    end = m.end()
                    if end < n and (text[end].isalnum() or text[end] == "_"):
                        raise self.error("need space between number and identifier", end)
                append((kinds[i], value, m.start(i)))
            elif i == 5:  # end
                break
            else:
                if value in "\"'":
                    raise self.error("unterminated string literal (strings cannot span lines)",
                                     m.start(i))
                raise self.error(f"unexpected character {value!r}", m.start(i))
        append(("eof", "", n))
        return toks

    # -- token stream
    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok[0] != "eof":
            self.i += 1
        return tok

    def accept(self, symbol: str) -> bool:
        if self.toks[self.i][0] == symbol:
            self.i += 1
            return True
        return False

    def expect(self, symbol: str) -> _Tok:
        tok = self.next()
        if tok[0] != symbol:
            raise self.error(f'expected "{symbol}", found {_describe(tok)}', tok)
        return tok

    # -- grammar
    def parse_message(self, schema: MessageSchema, close: str | None) -> Message:
        msg = Message(schema.name)
        seen: set[str] = set()
        while True:
            tok = self.peek()
            if tok[0] == "eof":
                if close is None:
                    return msg
                raise self.error(f'expected "{close}", found end of input', tok)
            if close is not None and tok[0] == close:
                self.next()
                return msg
            self.parse_field(msg, schema, seen)
            if not self.accept(","):
                self.accept(";")

    def open_message(self) -> str:
        tok = self.next()
        if tok[0] == "{":
            return "}"
        if tok[0] == "<":
            return ">"
        raise self.error(f'expected "{{", found {_describe(tok)}', tok)

    def parse_field(self, msg: Message, schema: MessageSchema, seen: set[str]) -> None:
        tok = self.next()
        if tok[0] == "number" and _DECIMAL.match(tok[1]):
            number = int(tok[1])
            if not 0 < number < 1 << 29:
                raise self.error(f"invalid field number {number}", tok)
            msg.append((number, self.parse_unknown_value(tok)))
            return
        if tok[0] == "[":
            raise self.error("extension and Any fields ([...]) are not supported", tok)
        if tok[0] != "ident":
            raise self.error(f"expected a field name, found {_describe(tok)}", tok)
        f = schema.by_name.get(tok[1])
        if f is None:
            raise self.error(f'message type "{schema.full_name}" has no field named "{tok[1]}"',
                             tok, hint=did_you_mean(tok[1], schema.by_name))
        if not f.repeated:
            if f.name in seen:
                raise self.error(f'non-repeated field "{f.name}" is specified multiple times', tok)
            seen.add(f.name)
        if f.kind == "message":
            self.accept(":")
            if self.peek()[0] == "[":
                list_tok = self.next()
                if not f.repeated:
                    raise self.error(f'field "{f.name}" is not repeated; "[" needs a repeated field',
                                     list_tok)
                if self.accept("]"):
                    return
                while True:
                    close = self.open_message()
                    msg.append((f.name, self.parse_message(f.message, close)))
                    if self.accept("]"):
                        return
                    self.expect(",")
            close = self.open_message()
            msg.append((f.name, self.parse_message(f.message, close)))
            return
        self.expect(":")
        if self.peek()[0] == "[":
            list_tok = self.next()
            if not f.repeated:
                raise self.error(f'field "{f.name}" is not repeated; "[" needs a repeated field',
                                 list_tok)
            if self.accept("]"):
                return
            while True:
                msg.append((f.name, self.parse_scalar(f)))
                if self.accept("]"):
                    return
                self.expect(",")
        msg.append((f.name, self.parse_scalar(f)))

    def parse_string(self) -> bytes:
        tok = self.next()
        if tok[0] != "string":
            raise self.error(f"expected a string, found {_describe(tok)}", tok)
        parts = [self.unescape(tok)]
        while self.peek()[0] == "string":  # adjacent literals concatenate
            parts.append(self.unescape(self.next()))
        return b"".join(parts)

    def unescape(self, tok: _Tok) -> bytes:
        body = tok[1][1:-1]
        if "\\" not in body:
            return body.encode("utf-8", "surrogatepass")
        out = bytearray()
        pos = 0
        for m in _ESCAPE.finditer(body):
            out += body[pos:m.start()].encode("utf-8", "surrogatepass")
            octal, hex2, u4, u8, simple = m.groups()
            if octal is not None:
                value = int(octal, 8)
                if value > 0xFF:
                    raise self.error(f"octal escape \\{octal} is out of range", tok[2] + 1 + m.start())
                out.append(value)
            elif hex2 is not None:
                out.append(int(hex2, 16))
            elif u4 is not None or u8 is not None:
                cp = int(u4 or u8, 16)
                if cp > 0x10FFFF:
                    raise self.error("unicode escape is out of range", tok[2] + 1 + m.start())
                out += chr(cp).encode("utf-8", "surrogatepass")
            elif simple in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[simple])
            else:
                raise self.error(f"invalid escape sequence \\{simple}", tok[2] + 1 + m.start())
            pos = m.end()
        out += body[pos:].encode("utf-8", "surrogatepass")
        return bytes(out)

    def parse_int_token(self, tok: _Tok) -> int:
        text = tok[1]
        if _DECIMAL.match(text):
            return int(text)
        if _HEX.match(text):
            return int(text, 16)
        if _OCTAL.match(text):
            return int(text, 8)
        raise self.error(f"expected an integer, found {_describe(tok)}", tok)

    def parse_scalar(self, f: FieldSchema) -> Any:
        t = f.type
        if t == "string" or t == "bytes":
            raw = self.parse_string()
            if t == "string":
                try:
                    return raw.decode("utf-8")
                except UnicodeDecodeError:
                    return raw
            return raw
        first = self.peek()
        negative = self.accept("-")
        tok = self.next()
        if f.kind == "enum":
            if tok[0] == "ident" and not negative:
                if tok[1] not in f.enum.by_name:
                    raise self.error(
                        f'unknown enumeration value "{tok[1]}" for field "{f.name}" ({f.enum.name})',
                        tok, hint=did_you_mean(tok[1], f.enum.by_name))
                return tok[1]
            if tok[0] == "number":
                v = self.parse_int_token(tok)
                v = -v if negative else v
                if not -(1 << 31) <= v < 1 << 31:
                    raise self.error(f"integer out of range for enum field \"{f.name}\"", first)
                return f.enum.by_number.get(v, v)
            raise self.error(f'expected an enum name or number for field "{f.name}", found '
                             f"{_describe(tok)}", tok)
        if t == "bool":
            if not negative:
                if tok[0] == "ident" and tok[1] in ("true", "True", "t"):
                    return True
                if tok[0] == "ident" and tok[1] in ("false", "False", "f"):
                    return False
                if tok[0] == "number" and tok[1] in ("0", "1"):
                    return tok[1] == "1"
            raise self.error(f'expected true or false for field "{f.name}", found {_describe(tok)}',
                             tok)
        if t == "float" or t == "double":
            if tok[0] == "ident" and tok[1].lower() in ("inf", "infinity", "nan"):
                v = math.nan if tok[1].lower() == "nan" else math.inf
            elif tok[0] == "number":
                text = tok[1]
                if _HEX.match(text) or _OCTAL.match(text):
                    v = float(self.parse_int_token(tok))
                else:
                    v = float(text.rstrip("fF"))
            else:
                raise self.error(f'expected a number for field "{f.name}", found {_describe(tok)}',
                                 tok)
            v = -v if negative else v
            return _to_float32(v) if t == "float" else v
        # integers
        if tok[0] != "number":
            raise self.error(f'expected an integer for field "{f.name}", found {_describe(tok)}',
                             tok)
        v = self.parse_int_token(tok)
        v = -v if negative else v
        lo, hi = _INT_RANGE[t]
        if not lo <= v < hi:
            raise self.error(f'integer out of range for field "{f.name}" ({t})', first)
        return v

    def parse_unknown_value(self, name_tok: _Tok) -> Unknown:
        colon = self.accept(":")
        tok = self.peek()
        if tok[0] == "{" or tok[0] == "<":
            close = self.open_message()
            out = bytearray()
            while not self.accept(close):
                inner = self.next()
                if inner[0] == "eof":
                    raise self.error(f'expected "{close}", found end of input', inner)
                if inner[0] != "number" or not _DECIMAL.match(inner[1]):
                    raise self.error("fields of an unknown field must be numbered, found "
                                     f"{_describe(inner)}", inner)
                number = int(inner[1])
                if not 0 < number < 1 << 29:
                    raise self.error(f"invalid field number {number}", inner)
                _put_unknown(out, number, self.parse_unknown_value(inner))
                if not self.accept(","):
                    self.accept(";")
            return Unknown(_LEN, bytes(out))
        if not colon:
            raise self.error(f'expected ":", found {_describe(tok)}', tok)
        if tok[0] == "string":
            return Unknown(_LEN, self.parse_string())
        first = tok
        negative = self.accept("-")
        tok = self.next()
        if tok[0] != "number":
            raise self.error(f"expected a number or string for field {name_tok[1]}, found "
                             f"{_describe(tok)}", tok)
        if _HEX.match(tok[1]) and not negative and len(tok[1]) in (10, 18):
            return Unknown(_FIXED32 if len(tok[1]) == 10 else _FIXED64, int(tok[1], 16))
        v = self.parse_int_token(tok)
        if negative:
            v = -v
        if not -(1 << 63) <= v < 1 << 64:
            raise self.error("integer out of range for a varint", first)
        return Unknown(_VARINT, v & _MASK64)


def parse_text(text: str | bytes, message: str = "HloModuleProto", *,
               file: str | None = None) -> Message:
    """Protobuf text format -> :class:`Message` of type ``message``.

    Accepts what :func:`to_text` and C++ TextFormat write, plus ``name: {``,
    ``<...>`` message delimiters, ``[a, b]`` lists for repeated fields, ``#``
    comments, single or double quotes, adjacent string concatenation and
    numbered (unknown) fields. Errors raise InputError with 1-based line/col.
    """
    schema = _schema(message)
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"text format input is not valid UTF-8 (byte {e.start})",
                             file=file) from None
    return _TextParser(text, file).parse_message(schema, None)


# ---------------------------------------------------------------------------
# Sniffing.

_OPCODE = re.compile(rb"[a-z][a-z0-9-]*\Z")


def _scan(buf: bytes, start: int, end: int, schema: MessageSchema):
    """Fields of a message, checked against the schema's wire types, without decoding."""
    pos = start
    while pos < end:
        number, wt, value, pos = _read_field(buf, pos, end, 1)
        f = schema.by_number.get(number)
        if f is not None:
            if not f.accepts(wt):
                raise _WireError(f"field {f.name}: wire type {wt}", pos)
            if f.type == "string":
                a, b = value
                try:
                    bytes(buf[a:b]).decode("utf-8")
                except UnicodeDecodeError:
                    raise _WireError(f"field {f.name}: not UTF-8", a) from None
        yield number, f, value


def _check_nested(buf: bytes, f: FieldSchema | None, value: Any) -> None:
    if f is not None and f.kind == "message":
        for _ in _scan(buf, value[0], value[1], f.message):
            pass


def _is_instruction(buf: bytes, a: int, b: int) -> bool:
    opcode = None
    for number, f, value in _scan(buf, a, b, SCHEMA["HloInstructionProto"]):
        if number == 2:
            opcode = bytes(buf[value[0]:value[1]])
        _check_nested(buf, f, value)
    return opcode is not None and _OPCODE.match(opcode) is not None


def _is_computation(buf: bytes, a: int, b: int) -> bool:
    instructions = 0
    for number, f, value in _scan(buf, a, b, SCHEMA["HloComputationProto"]):
        if number == 2:
            if not _is_instruction(buf, *value):
                return False
            instructions += 1
        else:
            _check_nested(buf, f, value)
    return instructions > 0


def _is_module(buf: bytes, a: int, b: int) -> bool:
    name = False
    computations = 0
    for number, f, value in _scan(buf, a, b, SCHEMA["HloModuleProto"]):
        if number == 1:
            name = value[1] > value[0]
        elif number == 3:
            if not _is_computation(buf, *value):
                return False
            computations += 1
        else:
            _check_nested(buf, f, value)
    return name and computations > 0


def _module_spans(buf: bytes) -> list[tuple[int, int]] | None:
    """Spans of HloProto.hlo_module if ``buf`` is a plausible HloProto."""
    spans = []
    for number, f, value in _scan(buf, 0, len(buf), SCHEMA["HloProto"]):
        if number == 1:
            if not _is_module(buf, *value):
                return None
            spans.append(value)
        else:
            _check_nested(buf, f, value)
    return spans or None


def looks_like_hlo_proto(data: bytes) -> str | None:
    """``"HloProto"``, ``"HloModuleProto"`` or None, by a strict structural check.

    The bytes must parse as wire format to the end, every known field must
    have its schema's wire type and valid UTF-8 strings (through module,
    computations, instructions and their direct sub-messages), the module must
    have a name and at least one computation, each with instructions whose
    opcodes look like HLO opcodes. Unknown field numbers are tolerated.
    HloProto (field 1 a nested HloModuleProto) is tried first.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return None
    buf = bytes(data)
    if len(buf) < 4 or buf.startswith(b"ML\xefR"):
        return None
    try:
        if _module_spans(buf):
            return "HloProto"
    except _WireError:
        pass
    try:
        if _is_module(buf, 0, len(buf)):
            return "HloModuleProto"
    except _WireError:
        pass
    return None


def module_proto_from_any(data: bytes) -> bytes:
    """HloProto or HloModuleProto bytes (gzip-compressed too) -> HloModuleProto bytes."""
    buf = bytes(data)
    if buf[:2] == b"\x1f\x8b":
        try:
            buf = gzip.decompress(buf)
        except (OSError, EOFError) as e:
            raise InputError(f"cannot decompress gzip data: {e}") from None
    kind = looks_like_hlo_proto(buf)
    if kind == "HloModuleProto":
        return buf
    if kind == "HloProto":
        # Several records of a message field merge; their concatenation is the merge.
        return b"".join(buf[a:b] for a, b in _module_spans(buf))
    raise InputError("not a serialized HloProto or HloModuleProto",
                     hint="expected XLA's binary HLO proto (*.pb); text protos go through parse_text")
