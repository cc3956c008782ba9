# ExZarr fuzz regression case: resize goes over the per-process heap limit
# first seen at step {:resize, {:delta, [2, 1, ...]}}: {:oom, ":killed"}
# found as case 371 of seed 128063 (EXZARR_FUZZ_SEED=128063) or while shrinking it, 0 shrinks
%{
  kind: :generated,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 758, [], false}},
    {:set_slice, :fit, {:box, 3, [], false}},
    {:read_chunk, {:chunk, 738}},
    {:open, [cache: {65536, -35}, prefix: []]},
    {:resize, {16, 9_223_372_036_854_775_807, 3}},
    {:resize, {:delta, [2, 1, -3]}},
    {:get_slice, {:box, 266, [], false}},
    {:get_slice, :whole}
  ],
  setup:
    {:store,
     [
       {"zarr.json",
        {:json,
         %{
           "attributes" => %{},
           "chunk_grid" => %{
             "configuration" => %{"chunk_shape" => [1, 6, 1]},
             "name" => "regular"
           },
           "chunk_key_encoding" => %{
             "configuration" => %{"separator" => "/"},
             "name" => "default"
           },
           "codecs" => [
             %{"name" => "vlen-bytes"},
             %{
               "configuration" => %{
                 "blocksize" => 0,
                 "clevel" => 5,
                 "cname" => "lz4",
                 "shuffle" => "shuffle",
                 "typesize" => 4
               },
               "name" => "blosc"
             }
           ],
           "data_type" => "variable_length_bytes",
           "dimension_names" => :null,
           "fill_value" => "",
           "node_type" => "array",
           "shape" => [2, 4, 5],
           "zarr_format" => 3
         }}}
     ]}
}
