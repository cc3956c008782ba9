defmodule ExZarr.Codecs.Zstd do
  @moduledoc """
  Zstandard (v3 `zstd`, numcodecs `zstd`): `level` -131072..22 (default 0, the library
  default) and `checksum` (default false). Frames always store their content size; frames from writers
  that omit it decode too.

      iex> {:ok, s} = ExZarr.Codecs.Zstd.init(%{"level" => 3}, %{decoded_size: 5})
      iex> {:ok, frame} = ExZarr.Codecs.Zstd.encode("hello", s)
      iex> ExZarr.Codecs.Zstd.decode(frame, s)
      {:ok, "hello"}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "zstd",
    v2_id: "zstd",
    kind: :bytes_to_bytes,
    keys: ["level", "checksum"],
    native: :zstd

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  # ZSTD_minCLevel()..ZSTD_maxCLevel() of libzstd 1.5 (the NIF checks the linked library's).
  @levels -131_072..22

  @impl true
  def init(config, spec) do
    with {:ok, level} <- Config.integer(config, "level", 0, @levels),
         {:ok, checksum} <- Config.boolean(config, "checksum", false) do
      {max, exact} = Numcodecs.decode_bounds(spec)
      {:ok, %{level: level, checksum: checksum, max: max, exact: exact}}
    end
  end

  # A chunk of two of the NIF's 4 MiB zstd jobs or more is compressed by zstd's own threads,
  # one per scheduler (a single large chunk would leave cores idle); its frame is the same
  # whatever the number of schedulers.
  @parallel_min 8 * 1024 * 1024

  @impl true
  def encode(data, s) do
    workers =
      if Native.encoder_input_size(data) >= @parallel_min, do: System.schedulers_online(), else: 0

    Native.zstd_compress(data, s.level, s.checksum, workers)
  end

  @impl true
  def configuration(s), do: %{"level" => s.level, "checksum" => s.checksum}

  # numcodecs (and so zarr-python and tensorstore's v2 driver) writes `checksum` only when set.
  @impl true
  def to_v2(config) do
    config = if config["checksum"] == true, do: config, else: Map.delete(config, "checksum")
    {:ok, config |> Map.take(["level", "checksum"]) |> Map.put("id", "zstd")}
  end
end
