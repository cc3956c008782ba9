defmodule ExZarr.Codecs.VlenBytes do
  @moduledoc """
  The `vlen-bytes` codec (array->bytes) for `:bytes` arrays (v3 `variable_length_bytes`):
  v3 `{"name": "vlen-bytes"}`, v2 the `{"id": "vlen-bytes"}` object codec of a `"|O"` array.
  The layout is described in `ExZarr.Codecs.VlenLayout`.

      iex> spec = %{shape: {2}, dtype: :bytes, fill_value: "", decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.VlenBytes.init(%{}, spec)
      iex> {:ok, iodata} = ExZarr.Codecs.VlenBytes.encode([<<0, 255>>, ""], s)
      iex> ExZarr.Codecs.VlenBytes.decode(IO.iodata_to_binary(iodata), s)
      {:ok, {<<0, 255>>, ""}}
  """
  use ExZarr.Codecs.VlenLayout, name: "vlen-bytes", dtype: :bytes, utf8: false
end
