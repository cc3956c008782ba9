defmodule ExZarr.Codecs.JenkinsLookup3Test do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [round_trip: 3]
  alias ExZarr.Codecs.JenkinsLookup3

  @text "Four score and seven years ago"

  test "lookup3's hashlittle of the data, appended; the seed changes it" do
    {:ok, s} = JenkinsLookup3.init(%{}, %{decoded_size: nil})
    # The test vector of lookup3.c: hashlittle("Four score and seven years ago", 30, 0).
    assert {@text <> <<0x17770551::32-little>>, {:ok, @text}} =
             round_trip(JenkinsLookup3, s, @text)

    {:ok, seeded} = JenkinsLookup3.init(%{"initval" => 1}, %{decoded_size: nil})
    # ... and hashlittle(..., 1).
    assert {@text <> <<0xCD628161::32-little>>, {:ok, @text}} =
             round_trip(JenkinsLookup3, seeded, @text)

    assert {:error, {:checksum_mismatch, _}} =
             JenkinsLookup3.decode(@text <> <<0x17770551::32-little>>, seeded)
  end

  test "initval within 32 bits; prefix only null; v2 lists every option" do
    assert {:error, _} = JenkinsLookup3.init(%{"initval" => -1}, %{decoded_size: nil})

    assert {:error, _} =
             JenkinsLookup3.init(%{"initval" => Bitwise.bsl(1, 32)}, %{decoded_size: nil})

    assert {:error, _} = JenkinsLookup3.init(%{"prefix" => [1, 2]}, %{decoded_size: nil})
    assert {:ok, _} = JenkinsLookup3.init(%{"prefix" => :null}, %{decoded_size: nil})

    assert JenkinsLookup3.to_v2(%{"initval" => 7}) ==
             {:ok, %{"id" => "jenkins_lookup3", "initval" => 7, "prefix" => :null}}
  end
end
