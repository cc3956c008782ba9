defmodule ExZarr.Codecs.JenkinsLookup3 do
  @moduledoc """
  numcodecs JenkinsLookup3 (v3 `numcodecs.jenkins_lookup3`, v2 `jenkins_lookup3`): Bob
  Jenkins' lookup3 hash (`hashlittle`, as HDF5 uses it) of the data, seeded with `initval`
  (0..4294967295, default 0), appended as a little-endian u32. See `ExZarr.Codecs.Checksum32`.

  numcodecs' `prefix` (bytes hashed before the data) cannot be written in JSON metadata (numcodecs
  keeps it as a numpy array), so only `null` is accepted.

      iex> {:ok, s} = ExZarr.Codecs.JenkinsLookup3.init(%{}, %{decoded_size: nil})
      iex> {:ok, enc} = ExZarr.Codecs.JenkinsLookup3.encode("Four score and seven years ago", s)
      iex> IO.iodata_to_binary(enc)
      <<"Four score and seven years ago", 0x51, 0x05, 0x77, 0x17>>
  """
  use ExZarr.Codecs.Checksum32,
    name: "numcodecs.jenkins_lookup3",
    v2_id: "jenkins_lookup3",
    checksum: :jenkins_lookup3,
    keys: ["initval", "prefix"]

  alias ExZarr.Codec.Config

  @impl true
  def init(config, _spec) do
    with {:ok, seed} <- Config.integer(config, "initval", 0, 0..0xFFFFFFFF),
         :error <- Config.fetch(config, "prefix") do
      {:ok, %{checksum: :jenkins_lookup3, seed: seed, location: "end", config: config}}
    else
      {:ok, prefix} -> Config.invalid("prefix", prefix, "null")
      error -> error
    end
  end

  # The options given in v3, as zarr-python; all of them in v2, as numcodecs.
  @impl true
  def configuration(s), do: s.config

  @impl true
  def to_v2(config),
    do: {:ok, Map.merge(%{"id" => v2_id(), "initval" => 0, "prefix" => :null}, config)}
end
