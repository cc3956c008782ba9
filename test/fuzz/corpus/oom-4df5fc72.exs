# ExZarr fuzz regression case: open goes over the per-process heap limit
# first seen at step {:open, []}: {:oom, ":killed"}
# found as case 1732 of seed 2 (EXZARR_FUZZ_SEED=2), 5 shrinks
%{
  kind: :generated,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
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
             "configuration" => %{"chunk_shape" => [2048, 2048]},
             "name" => "regular"
           },
           "chunk_key_encoding" => %{
             "configuration" => %{"separator" => "/"},
             "name" => "default"
           },
           "codecs" => [
             %{
               "configuration" => %{
                 "chunk_shape" => [1, 1],
                 "codecs" => [%{"configuration" => %{"endian" => "little"}, "name" => "bytes"}],
                 "index_codecs" => [
                   %{"configuration" => %{"endian" => "little"}, "name" => "bytes"},
                   %{"name" => "crc32c"}
                 ],
                 "index_location" => "end"
               },
               "name" => "sharding_indexed"
             }
           ],
           "data_type" => "uint32",
           "dimension_names" => :null,
           "fill_value" => 0,
           "node_type" => "array",
           "shape" => [2048, 2048],
           "storage_transformers" => [],
           "zarr_format" => 3
         }}}
     ]}
}
