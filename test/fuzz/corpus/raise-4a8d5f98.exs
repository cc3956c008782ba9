# ExZarr fuzz regression case: raises ArgumentError in ExZarr.Codecs.ShardingIndexed.-encode_chunks/3-fun-1-/4
# first seen at step {:write_chunk, {:chunk, 951}, :fit}: {:raise, %{frame: "ExZarr.Codecs.ShardingIndexed.-encode_chunks/3-fun-1-/4 (lib/ex_zarr/codecs/sharding_indexed.ex:431)", kind: ArgumentError, message: "argument error"}}
# found as case 915 of seed 665859 (EXZARR_FUZZ_SEED=665859) or while shrinking it, 42 shrinks
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:open, [write_empty_chunks: 0]},
    {:set_slice, :fit, {:box, 3, [], false}},
    {:get_slice, {:box, 0, [], false}},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: :int32,
       shape: {1},
       compressor: nil,
       order: "C",
       endian: :little,
       chunks: {1},
       shards: {1}
     ]}
}
