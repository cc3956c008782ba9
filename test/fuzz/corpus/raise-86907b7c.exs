# ExZarr fuzz regression case: raises ArgumentError in Task.Supervised.stream/7
# first seen at step {:chunk_stream, [bogus: 1, bogus: 0, parallel: :inner]}: {:raise, %{frame: "Task.Supervised.stream/7 (lib/task/supervised.ex:181)", kind: ArgumentError, message: ":max_concurrency must be an integer greater than zero"}}
# found as case 36 of seed 1 (EXZARR_FUZZ_SEED=1), 33 shrinks
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:get_slice, {:box, 0, [], false}},
    {:chunk_stream, [parallel: 0]},
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
       shape: {0},
       compressor: %{id: "blosc"},
       order: "C",
       endian: :little,
       chunks: {1}
     ]}
}
